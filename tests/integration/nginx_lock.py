"""nginx with WebDAV LOCK/UNLOCK (Debian's libnginx-mod-http-dav-ext) on a
free loopback port, with its own config, for the leases of the remote tier
(test_remote_lease.py, scripts/bench-remote's crowd case).  Beside nginx.py
rather than in it: the plain server there is the one without LOCK.

Locations, each a remote= prefix: /lk/ (locks expire after SHORT_S
seconds on the server), /lklong/ (after an hour: only a waiter's bound
ends a dead holder's lease), /nolock/ (dav_methods PUT without dav_ext:
LOCK is 405).  The configuration is the one docs/remote-cache.md gives,
without the tokens."""
import os
import socket
import subprocess
import time

from nginx import NGINX, free_port

MODULE = "/usr/lib/nginx/modules/ngx_http_dav_ext_module.so"
SHORT_S = 15


def available():
    """Why this nginx cannot lock, or None."""
    if not os.path.exists(NGINX):
        return "nginx is not installed (scripts/setup installs nginx-light)"
    if not os.path.exists(MODULE):
        return "libnginx-mod-http-dav-ext is not installed (scripts/setup installs it)"
    return None


class LockNginx:
    def __init__(self, base):
        self.base = base
        self.root = os.path.join(base, "root")
        os.makedirs(self.root, exist_ok=True)
        self.port = free_port()
        self.access = os.path.join(base, "access.log")
        conf = os.path.join(base, "nginx.conf")
        user = "user root root;\n" if os.geteuid() == 0 else ""
        dav = """dav_methods PUT DELETE;
            create_full_put_path on;
            dav_access user:rw;"""
        with open(conf, "w") as f:
            f.write(f"""{user}load_module {MODULE};
daemon off;
worker_processes 1;
pid {base}/nginx.pid;
error_log {base}/error.log;
events {{ worker_connections 256; }}
http {{
    log_format lease '$request_method $uri $status';
    access_log {self.access} lease;
    client_body_temp_path {base}/body;
    proxy_temp_path {base}/proxy;
    fastcgi_temp_path {base}/fastcgi;
    uwsgi_temp_path {base}/uwsgi;
    scgi_temp_path {base}/scgi;
    client_max_body_size 0;
    dav_ext_lock_zone zone=short:1m timeout={SHORT_S}s;
    dav_ext_lock_zone zone=long:1m timeout=1h;
    server {{
        listen 127.0.0.1:{self.port};
        root {self.root};
        location /lk/ {{
            {dav}
            dav_ext_methods LOCK UNLOCK;
            dav_ext_lock zone=short;
        }}
        location /lklong/ {{
            {dav}
            dav_ext_methods LOCK UNLOCK;
            dav_ext_lock zone=long;
        }}
        location / {{
            {dav}
        }}
    }}
}}
""")
        self.proc = subprocess.Popen([NGINX, "-p", base, "-e", base + "/error.log", "-c", conf],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise AssertionError("nginx did not start: " +
                                         open(base + "/error.log").read())
                time.sleep(0.05)

    def url(self, prefix):
        return f"http://127.0.0.1:{self.port}/{prefix}"

    def requests(self, prefix):
        """(method, uri, status) of every request under /prefix/ so far."""
        out = []
        with open(self.access) as f:
            for line in f:
                p = line.split()
                if len(p) == 3 and p[1].startswith(f"/{prefix}/"):
                    out.append((p[0], p[1], int(p[2])))
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
