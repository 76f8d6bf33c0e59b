"""nginx serving a WebDAV folder on a free loopback port, with its own
config, for the remote tier's test (test_remote.py) and its benchmark
(scripts/bench-remote).  Locations: / (GET, HEAD, PUT), /tok/ (logs the
Authorization header to auth.log), /err/ (always 503), /deny/ (PUT
forbidden), /slow/ (root/slowsrc/ at 20 bytes/s)."""
import os
import shutil
import socket
import subprocess
import time

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    """An nginx of a config of its own (base/nginx.conf), in the foreground
    as a child, on self.port: started, stopped, started again.  A subclass
    gives the config's head (modules) and its http block's own lines."""

    HEAD = ""
    CONNECTIONS = 64

    def __init__(self, base):
        self.base = base
        self.root = os.path.join(base, "root")
        os.makedirs(self.root, exist_ok=True)
        self.port = free_port()
        self.access = os.path.join(base, "access.log")
        user = "user root root;\n" if os.geteuid() == 0 else ""
        with open(os.path.join(base, "nginx.conf"), "w") as f:
            f.write(f"""{user}{self.HEAD}daemon off;
worker_processes 1;
pid {base}/nginx.pid;
error_log {base}/error.log;
events {{ worker_connections {self.CONNECTIONS}; }}
http {{
    client_body_temp_path {base}/body;
    proxy_temp_path {base}/proxy;
    fastcgi_temp_path {base}/fastcgi;
    uwsgi_temp_path {base}/uwsgi;
    scgi_temp_path {base}/scgi;
    client_max_body_size 0;
{self.http()}}}
""")
        self.start()

    def http(self):
        raise NotImplementedError

    def start(self):
        self.proc = subprocess.Popen([NGINX, "-p", self.base, "-e", self.base + "/error.log",
                                      "-c", os.path.join(self.base, "nginx.conf")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise AssertionError("nginx did not start: " +
                                         open(self.base + "/error.log").read())
                time.sleep(0.05)

    def restart(self):
        """Stopped, then started again on its port with its config and root."""
        self.stop()
        self.start()

    def url(self, prefix):
        return f"http://127.0.0.1:{self.port}/{prefix}"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Nginx(Server):
    """The plain WebDAV server (no LOCK)."""

    def http(self):
        base = self.base
        return f"""    access_log {self.access};
    log_format auth '$request_method $uri $http_authorization';
    server {{
        listen 127.0.0.1:{self.port};
        root {self.root};
        location /tok/ {{
            access_log {base}/auth.log auth;
            dav_methods PUT DELETE;
            create_full_put_path on;
        }}
        location /err/ {{
            return 503;
        }}
        location /deny/ {{
            dav_methods PUT DELETE;
            create_full_put_path on;
            limit_except GET HEAD {{ deny all; }}
        }}
        location /slow/ {{
            alias {self.root}/slowsrc/;
            limit_rate 20;
        }}
        location / {{
            dav_methods PUT DELETE;
            create_full_put_path on;
            dav_access user:rw;
        }}
    }}
"""
