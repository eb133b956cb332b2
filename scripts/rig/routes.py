"""The nginx front ends with the Groove URL layout (/api/mopidy/rpc, /ws/mopidy, /stream.flac,
/local/): "nginx" on plain HTTP and TLS, "nginx_home" and "nginx_remote" for the route tests; and the
rig's own certificate authority."""

import os

from .procs import LOOPBACK, run_quiet, tcp_open
from .service import Service


class RoutesMixin:
    def make_tls_files(self):
        """A certificate authority of the rig's own and a certificate for 127.0.0.1 signed by it,
        so https/wss are tested with verification on (clients trust the CA through ca_file)."""
        d = self.path("tls")
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        run_quiet(["openssl", "req", "-x509", *ec, "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem",
                   "-days", "2", "-subj", "/CN=Groove Bridge test rig CA",
                   "-addext", "basicConstraints=critical,CA:TRUE",
                   "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        run_quiet(["openssl", "req", *ec, "-keyout", f"{d}/server.key", "-out", f"{d}/server.csr",
                   "-subj", f"/CN={LOOPBACK}"])
        with open(f"{d}/server.ext", "w") as f:
            f.write(f"subjectAltName=IP:{LOOPBACK}\nbasicConstraints=CA:FALSE\n"
                    "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
        run_quiet(["openssl", "x509", "-req", "-in", f"{d}/server.csr", "-CA", f"{d}/ca.pem",
                   "-CAkey", f"{d}/ca.key", "-CAcreateserial", "-out", f"{d}/server.pem", "-days", "2",
                   "-extfile", f"{d}/server.ext"])

    def write_nginx_config(self, name, servers):
        """nginx `name` (its own folder, pid and logs) serving the Groove layout on each of
        `servers`: (port, tls) pairs."""
        d = self.path(name)
        for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        m, i = self.ports["mopidy"], self.ports["icecast"]
        user = "user root;" if self.is_root else ""
        # The Groove URL layout.
        locations = f"""
    location = /api/mopidy/rpc {{ proxy_pass http://{LOOPBACK}:{m}/mopidy/rpc; }}
    location = /ws/mopidy {{
      proxy_pass http://{LOOPBACK}:{m}/mopidy/ws;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_read_timeout 1d;
    }}
    location = /stream.flac {{
      proxy_pass http://{LOOPBACK}:{i}/stream.flac;
      proxy_buffering off;
      proxy_read_timeout 1h;
    }}
    location /local/ {{ proxy_pass http://{LOOPBACK}:{m}; }}
    location /mopidy/ {{
      proxy_pass http://{LOOPBACK}:{m};
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
    }}"""
        tls = self.path("tls")
        blocks = ""
        for port, secure in servers:
            if secure:
                blocks += f"""
  server {{
    listen {LOOPBACK}:{port} ssl;
    ssl_certificate {tls}/server.pem;
    ssl_certificate_key {tls}/server.key;{locations}
  }}"""
            else:
                blocks += f"""
  server {{
    listen {LOOPBACK}:{port};{locations}
  }}"""
        cfg = f"""{user}
daemon off;
master_process on;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 256; }}
http {{
  access_log {d}/access.log;
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  map $http_upgrade $connection_upgrade {{ default upgrade; '' close; }}{blocks}
}}
"""
        path = os.path.join(d, "nginx.conf")
        with open(path, "w") as f:
            f.write(cfg)
        return path

    def nginx_service(self, name="nginx"):
        cfg = self.path(name, "nginx.conf")
        port = self.ports[name]
        return Service(name, ["nginx", "-c", cfg, "-p", self.path(name)], log_path=self.logp(name),
                       ready=lambda: tcp_open(port), ready_interval=0.01, deathsig=False)

    def start_nginx(self):
        self.make_tls_files()
        # The front end every test uses, on plain HTTP and on TLS.
        self.write_nginx_config("nginx", [(self.ports["nginx"], False), (self.ports["nginx_tls"], True)])
        self.add(self.nginx_service("nginx"))
        # The route tests' own pair: home's front end is stopped to leave home.
        self.write_nginx_config("nginx_home", [(self.ports["nginx_home"], False)])
        self.add(self.nginx_service("nginx_home"))
        self.write_nginx_config("nginx_remote", [(self.ports["nginx_remote"], True)])
        self.add(self.nginx_service("nginx_remote"))
