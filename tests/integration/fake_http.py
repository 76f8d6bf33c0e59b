"""A Python HTTP server in a thread on a free loopback port, for the remote
tier's tests of servers that answer in ways nginx will not (redirects to
another address, hostile headers, endless bodies, lies about locks).  A
subclass defines its handler class and hands it to __init__."""
import http.server
import threading


class Served:
    def __init__(self, handler, host="127.0.0.1"):
        self.host = host
        self.httpd = http.server.ThreadingHTTPServer((host, 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, prefix):
        return f"http://{self.host}:{self.port}/{prefix}"

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
