# make install / make uninstall, with PREFIX (default ~/.local, or /usr/local as root) and DESTDIR.
.PHONY: all install uninstall test demo
all:
	swift build -c release --product groove-bridge
install:
	scripts/install
uninstall:
	scripts/install --uninstall
test:
	scripts/test
demo:
	scripts/demo
