"""What the test fixture servers share: serve on a free 127.0.0.1 port, print it, and exit when
the test process that started the server is gone (it may die without stopping it)."""
import os
import socketserver
import threading
import time


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # clients hanging up mid-reply is what the tests do


def _exit_with_parent():
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


def serve(handler, server_class=Server):
    threading.Thread(target=_exit_with_parent, daemon=True).start()
    srv = server_class(("127.0.0.1", 0), handler)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()
