"""The rig's private session bus and the stand-in system bus."""

import os

from .service import Service


class BusesMixin:
    def start_dbus(self):
        self.add(Service("dbus", ["dbus-daemon", "--session", "--nofork", "--nopidfile",
                                  f"--address={self.bus_address}"],
                         env=self.base_env(), log_path=self.logp("dbus"),
                         ready=lambda: os.path.exists(self.path("bus", "socket"))))

    def start_system_bus(self):
        """A bus of type system for logind's and NetworkManager's signals: the test owns their
        names (the policy allows those two and no other) and sends the real signals."""
        cfg = self.path("sysbus", "system.conf")
        with open(cfg, "w") as f:
            f.write(f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={self.path("sysbus", "socket")}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="org.freedesktop.login1"/>
    <allow own="org.freedesktop.NetworkManager"/>
    <allow send_destination="*"/>
    <allow send_type="signal"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
""")
        self.add(Service("sysbus", ["dbus-daemon", f"--config-file={cfg}", "--nofork", "--nopidfile"],
                         env=self.base_env(), log_path=self.logp("sysbus"),
                         ready=lambda: os.path.exists(self.path("sysbus", "socket"))))
