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

from nginx import NGINX, Server

MODULE = "/usr/lib/nginx/modules/ngx_http_dav_ext_module.so"
SHORT_S = 15


def available():
    """Why this nginx cannot lock, or None."""
    if not os.path.exists(NGINX):
        return "nginx is not installed (scripts/setup installs nginx-light)"
    if not os.path.exists(MODULE):
        return "libnginx-mod-http-dav-ext is not installed (scripts/setup installs it)"
    return None


class LockNginx(Server):
    HEAD = f"load_module {MODULE};\n"
    CONNECTIONS = 256

    def http(self):
        dav = """dav_methods PUT DELETE;
            create_full_put_path on;
            dav_access user:rw;"""
        return f"""    log_format lease '$request_method $uri $status';
    access_log {self.access} lease;
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
"""

    def requests(self, prefix):
        """(method, uri, status) of every request under /prefix/ so far."""
        out = []
        with open(self.access) as f:
            for line in f:
                p = line.split()
                if len(p) == 3 and p[1].startswith(f"/{prefix}/"):
                    out.append((p[0], p[1], int(p[2])))
        return out
