"""The remote cache tier (docs/cache.md, "Remote tier") against a real nginx
WebDAV folder on 127.0.0.1: machine A converts and uploads, machine B (its
own cache, SRC at another path) reads every view with no conversion, bad
objects are never served, a stopped server costs only a local conversion,
eight ~100 MB uploads leave the daemon's RSS flat, the token is in no log,
xattr, command line or environment, and bad option values stop the mount
with status 2.  nginx itself: nginx.py."""
import concurrent.futures
import glob
import http.server
import json
import os
import socket
import re
import shutil
import subprocess
import threading
import time
import unittest

from common import FORMATS, SOURCE, run, run_tests, tempdir, tool
from fake_http import Served
from mount import Mount
from nginx import NGINX, Nginx

PROPS = os.path.join(SOURCE, "examples", "assets", "props")
REC = 56
# An answer not begun within remote_timeout_ms (default 150) is a fault that
# backs off (RemoteSlowOrHugeTest): tests of anything else give the servers
# here, on a machine busy with other tests, time to answer.
PATIENT = "remote_timeout_ms=2000"
PATIENT_ARGS = ["--remote-timeout-ms", "2000"]


def patient(opts):
    """opts with PATIENT unless they set remote_timeout_ms themselves."""
    if any(o.startswith("remote_timeout_ms=") for o in opts):
        return list(opts)
    return [PATIENT] + list(opts)


def read_views(mnt):
    """{relative path: bytes} of every view file under mnt."""
    out = {}
    for d, dirs, files in os.walk(mnt):
        for f in files:
            if f.rsplit(".", 1)[-1] in FORMATS:
                p = os.path.join(d, f)
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, mnt)] = fh.read()
    return out


def objects(root, prefix, kind):
    return sorted(glob.glob(os.path.join(root, prefix, "v2", kind, "??", "*")))


def wait_drained(m, timeout=60):
    deadline = time.time() + timeout
    while True:
        st = m.stats()
        if st["remote_queue"] == 0 and st["remote_uploads"] > 0:
            return st
        if time.time() > deadline:
            raise AssertionError(f"upload queue did not drain: {st}\n{m.output()}")
        time.sleep(0.1)


def write_grid(path, n):
    """An n x n OBJ grid with texture coordinates: n*n vertices, 2(n-1)^2
    triangles, every vertex distinct (no weld shrinks it)."""
    with open(path, "w") as f:
        f.write("".join(f"v {i * 0.0137:.6f} {(i * j % 97) * 0.0011:.6f} {j * 0.0173:.6f}\n"
                        for i in range(n) for j in range(n)))
        f.write("".join(f"vt {i / n:.6f} {j / n:.6f}\n" for i in range(n) for j in range(n)))
        lines = []
        for i in range(n - 1):
            for j in range(n - 1):
                a = i * n + j + 1
                b, c, d = a + 1, a + n, a + n + 1
                lines.append(f"f {a}/{a} {b}/{b} {d}/{d}\nf {a}/{a} {d}/{d} {c}/{c}\n")
        f.write("".join(lines))


def copy_props(src, src_from=PROPS):
    """The example props (small: every view inside its model's entry, one
    manifest object a model) and a grid whose larger views are entries, and
    objects, of their own."""
    shutil.copytree(src_from, src)
    if src_from == PROPS:
        write_grid(os.path.join(src, "grid.obj"), 60)


def all_payloads(paths):
    """The payloads of trailer-form objects (the record cut off)."""
    return [open(p, "rb").read()[:-REC] for p in paths]


def vm_kib(pid, field):
    """A /proc/PID/status field in KiB (VmHWM: the peak resident set)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")



def slurp(path):
    with open(path, "rb") as f:
        return f.read()


def without_time(obj):
    """A trailer-form object's payload without the conversion's wall time a
    model entry ends with ("mfsconv1" and 8 bytes, docs/cache.md): what two
    machines' conversions of one model share byte for byte."""
    p = obj[:-REC]
    return p[:-16] if p[-16:-8] == b"mfsconv1" else p

class Misbehaving(Served):
    """A small HTTP server on 127.0.0.1 for what nginx will not do on cue.
    GET and HEAD serve the files under root (404 if absent); a PUT is read
    and answered 201, stored nowhere.  The first path component picks a
    misbehaviour: /moved/ answers every request with a 301 to another host
    (127.0.0.2, whose server records anything reaching it in self.elsewhere),
    /noput/ refuses PUT with 405, /busy/ answers 429 with Retry-After: 120,
    /locked/ answers 403, /nohead/ answers HEAD with 503, /trickle/ reads a
    PUT's body at 160 KB/s, /toobig/ refuses PUT with 413, /fullput/ answers
    PUT with 500 (a full disk).  self.requests: (method, path, Authorization)."""

    def __init__(self, root):
        self.requests, self.elsewhere = [], []
        outer = self

        class Other(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                outer.elsewhere.append((self.command, self.path, self.headers.get("Authorization")))
                self.send_error(404)
            do_HEAD = do_PUT = do_GET

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def answer(self, code, body=b"", headers=()):
                self.send_response(code)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_GET(self):
                outer.requests.append((self.command, self.path, self.headers.get("Authorization")))
                mode = self.path.split("/")[1]
                if self.command == "PUT":
                    n = int(self.headers.get("Content-Length", 0))
                    while n > 0:
                        chunk = self.rfile.read(min(n, 16384))
                        if not chunk:
                            break
                        n -= len(chunk)
                        if mode == "trickle":
                            time.sleep(0.1)
                if mode == "moved":
                    return self.answer(301, b"<html><body>Moved</body></html>",
                                       [("Location", f"http://127.0.0.2:{outer.other_port}{self.path}")])
                if mode == "busy":
                    return self.answer(429, b"slow down", [("Retry-After", "120")])
                if mode == "locked":
                    return self.answer(403, b"<html>Forbidden</html>")
                if mode == "nohead" and self.command == "HEAD":
                    return self.answer(503, b"<html>Service Unavailable</html>")
                if self.command == "PUT":
                    return self.answer({"noput": 405, "toobig": 413, "fullput": 500}.get(mode, 201))
                path = os.path.join(root, self.path.lstrip("/"))
                if not os.path.isfile(path):
                    return self.answer(404)
                with open(path, "rb") as f:
                    self.answer(200, f.read())
            do_HEAD = do_PUT = do_GET

        self.other = Served(Other, "127.0.0.2")
        self.other_port = self.other.port
        super().__init__(Handler)

    def stop(self):
        super().stop()
        self.other.stop()


class RemoteTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(NGINX):
            raise unittest.SkipTest("nginx is not installed (scripts/setup installs nginx-light)")
        cls.td = tempdir()
        cls.base = cls.td.name
        cls.nginx = Nginx(os.path.join(cls.base, "nginx"))
        cls.odd = Misbehaving(cls.nginx.root)

    @classmethod
    def tearDownClass(cls):
        cls.odd.stop()
        cls.nginx.stop()
        cls.td.cleanup()

    def machine(self, name, prefix, *opts, src_from=PROPS):
        src = os.path.join(self.base, name, "some", "other", "src")
        if not os.path.exists(src):
            copy_props(src, src_from)
        return Mount(src, os.path.join(self.base, name, "mnt"), os.path.join(self.base, name, "cache"),
                     "remote=" + self.nginx.url(prefix), *patient(opts))

    def machine_a(self, prefix):
        with self.machine("a-" + prefix, prefix) as a:
            views = read_views(a.mnt)
            st = wait_drained(a)
        self.assertGreater(st["conversions"], 0)
        self.assertGreater(len(views), 3)
        return views, st

    def test_a_uploads_b_reads_without_converting(self):
        views_a, st_a = self.machine_a("shared")
        root = self.nginx.root
        view_objs = objects(root, "shared", "view")
        man_objs = objects(root, "shared", "manifest")
        self.assertGreater(len(man_objs), 0)
        # a manifest object a model; the grid's large views as objects of
        # their own, the small views inside the manifests
        self.assertEqual(len(man_objs), 3)  # cone, tetra, grid
        self.assertGreater(len(view_objs), 0)
        small = [v for v in set(views_a.values()) if len(v) <= 16384]
        self.assertGreater(len(small), 3)
        mans = all_payloads(man_objs)
        for v in small:
            self.assertTrue(any(v in m for m in mans), len(v))
        payloads = set()
        for p in view_objs + man_objs:
            name = os.path.relpath(p, os.path.join(root, "shared", "v2"))
            self.assertRegex(name, r"^(view|manifest)/[0-9a-f]{2}/[0-9a-f]{30}$")
            data = open(p, "rb").read()
            rec = data[-REC:]
            # the trailer form: payload, then the record whose key is the name
            self.assertEqual(rec[:8], b"mfscache")
            self.assertEqual(int.from_bytes(rec[8:12], "little"), 2)
            self.assertEqual(rec[16:32].hex(), name.split("/")[1] + name.split("/")[2])
            self.assertEqual(int.from_bytes(rec[32:40], "little"), len(data) - REC)
            if p in view_objs:
                payloads.add(data[:-REC])
        self.assertLessEqual(set(views_a.values()) - set(small), payloads)
        self.assertEqual(st_a["remote_bytes_up"],
                         sum(os.path.getsize(p) for p in view_objs + man_objs))

        # machine B: another cache, SRC at another path
        with self.machine("b", "shared") as b:
            views_b = read_views(b.mnt)
            st_b = b.stats()
        self.assertEqual(views_b, views_a)
        self.assertEqual(st_b["conversions"], 0)
        self.assertGreaterEqual(st_b["remote_hits"], len(man_objs) + len(view_objs))
        self.assertEqual(st_b["remote_errors"], 0)
        # and in the caches' persistent counters (meshfs-cache stats)
        for name, key, want in [("b", "remote_hits", st_b["remote_hits"]),
                                ("b", "remote_bytes_down", st_b["remote_bytes_down"]),
                                ("a-shared", "remote_bytes_up", st_a["remote_bytes_up"])]:
            p = run([tool("meshfs-cache"), "--cache-dir", os.path.join(self.base, name, "cache"),
                     "--json", "stats"], check=True)
            self.assertEqual(json.loads(p.stdout)[key], want, (name, key))
        self.assertGreater(st_b["remote_bytes_down"], 0)
        p = run([tool("meshfs-cache"), "--cache-dir", os.path.join(self.base, "b", "cache"), "stats"],
                check=True)
        self.assertRegex(p.stdout, r"remote hits +%d\n" % st_b["remote_hits"])

    def test_bad_objects_never_served(self):
        views_a, _ = self.machine_a("bad")
        objs = objects(self.nginx.root, "bad", "view") + objects(self.nginx.root, "bad", "manifest")
        for i, p in enumerate(objs):
            data = bytearray(open(p, "rb").read())
            if i % 2 == 0:
                data[0] ^= 0xFF  # checksum no longer matches
            else:
                data = data[:len(data) // 2]  # truncated
            with open(p, "wb") as f:
                f.write(data)
        with self.machine("c", "bad") as c:
            views_c = read_views(c.mnt)
            st = c.stats()
            log = c.output()
        self.assertEqual(views_c, views_a)
        self.assertGreater(st["conversions"], 0)
        # none was sound: nothing came from the server
        self.assertEqual(st["remote_hits"], 0)
        self.assertGreaterEqual(st["remote_misses"], 1)
        self.assertEqual(log.count("bad object ("), 1, log)

    def test_bad_objects_repaired(self):
        """Issue 35 item 3: the machine that finds an object bad and
        converts the model puts the good object over it (HEAD would say
        200), counts it, and a later machine hits and converts nothing."""
        views_a, _ = self.machine_a("fix")
        objs = objects(self.nginx.root, "fix", "view") + objects(self.nginx.root, "fix", "manifest")
        good = {p: slurp(p) for p in objs}
        for i, p in enumerate(objs):
            data = bytearray(good[p])
            if i % 2 == 0:
                data[len(data) // 3] ^= 0x5A  # checksum no longer matches
            else:
                data = data[:len(data) - 7]  # truncated
            with open(p, "wb") as f:
                f.write(data)
        with self.machine("fix-b", "fix") as d:
            self.assertEqual(read_views(d.mnt), views_a)
            st = wait_drained(d)
            log = d.output()
        self.assertGreater(st["conversions"], 0)
        self.assertEqual(st["remote_hits"], 0)
        # every object this machine asked for and found bad is good again,
        # byte for byte what machine A put there (a model entry's recorded
        # conversion time aside: this machine's own)
        fixed = [p for p in objs if without_time(slurp(p)) == without_time(good[p])]
        self.assertEqual(st["remote_repaired"], len(fixed), log)
        self.assertGreater(len(fixed), 0)
        self.assertEqual(len(fixed), len(objs), [os.path.basename(p) for p in objs if p not in fixed])
        self.assertEqual(log.count("a bad object replaced with the one converted here"), 1, log)
        with self.machine("fix-c", "fix") as e:
            self.assertEqual(read_views(e.mnt), views_a)
            st_e = e.stats()
        self.assertEqual(st_e["conversions"], 0)
        self.assertGreater(st_e["remote_hits"], 0)
        self.assertEqual(st_e["remote_misses"], 0)

    def test_other_key_or_version_never_served(self):
        views_a, _ = self.machine_a("keysrc")
        root = self.nginx.root
        # sound objects, each under another view's name
        shutil.copytree(os.path.join(root, "keysrc"), os.path.join(root, "swap"))
        objs = objects(root, "swap", "view") + objects(root, "swap", "manifest")
        datas = [open(p, "rb").read() for p in objs]
        for p, data in zip(objs, datas[1:] + datas[:1]):
            with open(p, "wb") as f:
                f.write(data)
        with self.machine("swap", "swap") as m:
            views = read_views(m.mnt)
            st = m.stats()
        self.assertEqual(views, views_a)
        self.assertGreater(st["conversions"], 0)
        self.assertEqual(st["remote_hits"], 0)
        # another container version's folder is never looked at
        shutil.copytree(os.path.join(root, "keysrc", "v2"), os.path.join(root, "old", "v1"))
        shutil.copytree(os.path.join(root, "keysrc", "v2"), os.path.join(root, "old", "v3"))
        with self.machine("old", "old") as m:
            views = read_views(m.mnt)
            st = m.stats()
        self.assertEqual(views, views_a)
        self.assertEqual(st["remote_hits"], 0)
        self.assertGreater(st["conversions"], 0)

    def refusing_port(self):
        """A port bound but never listened on: every connection is refused,
        and no server of a test running in parallel can take it meanwhile
        (a stopped server's port could be handed to one)."""
        hold = socket.socket()
        hold.bind(("127.0.0.1", 0))
        self.addCleanup(hold.close)
        return hold.getsockname()[1]

    def test_server_down_converts_locally(self):
        views_a, _ = self.machine_a("down")
        url_port = self.refusing_port()
        src = os.path.join(self.base, "d", "src")
        copy_props(src)
        with Mount(src, os.path.join(self.base, "d", "mnt"), os.path.join(self.base, "d", "cache"),
                   f"remote=http://127.0.0.1:{url_port}/down") as d:
            t0 = time.time()
            views_d = read_views(d.mnt)
            elapsed = time.time() - t0
            st = d.stats()
        self.assertEqual(views_d, views_a)
        self.assertGreater(st["conversions"], 0)
        self.assertEqual(st["remote_hits"], 0)
        self.assertGreaterEqual(st["remote_errors"], 1)
        self.assertLess(elapsed, 60)

    def test_log_names_the_server_never_its_password(self):
        """Each failure's line names the server (the URL without its
        user:password@), so a machine with two mounts, or a CI log, says
        which server failed; the password in the URL is never shown."""
        port = self.refusing_port()
        p = run([tool("meshfs-convert"), "-q", "-f", "fmd", "--cache-dir",
                 os.path.join(self.base, "gone", "cache"), "--remote",
                 f"http://meshfs:hunter2pw@127.0.0.1:{port}/team/", "-o",
                 os.path.join(self.base, "gone", "out"), PROPS], timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"meshfs-convert: remote cache: http://127.0.0.1:{port}/team: GET: "
                      "Couldn't connect to server; reads paused for 30 s (uploads go on)", p.stderr)
        self.assertNotIn("hunter2pw", p.stderr)
        # a bad object's line names the server and the object
        views_a, _ = self.machine_a("named")
        obj = objects(self.nginx.root, "named", "manifest")[0]
        with open(obj, "r+b") as f:
            f.write(b"<html>")
        url = self.nginx.url("named").replace("http://", "http://meshfs:hunter2pw@")
        src = os.path.join(self.base, "named-b", "src")
        copy_props(src)
        with Mount(src, os.path.join(self.base, "named-b", "mnt"),
                   os.path.join(self.base, "named-b", "cache"), "remote=" + url, PATIENT) as m:
            self.assertEqual(read_views(m.mnt), views_a)
            log = m.output()
        name = os.path.relpath(obj, self.nginx.root)
        self.assertIn(f"remote cache: {self.nginx.url(name)}: bad object (", log)
        self.assertNotIn("hunter2pw", log)

    def odd_machine(self, name, prefix, *opts):
        src = os.path.join(self.base, name, "src")
        copy_props(src)
        return Mount(src, os.path.join(self.base, name, "mnt"), os.path.join(self.base, name, "cache"),
                     "remote=" + self.odd.url(prefix), *patient(opts))

    def test_redirect_and_refusal_said_never_followed(self):
        """A 301 to another host (an http->https or moved-server rule) and a
        403 on every request: each a miss converted locally, logged once with
        the status and, for a redirect, where to; never taken for a bad
        object; the token never reaches the other host; the uploads stop
        (read-only for the session) without backing off the reads."""
        secret = "redirect-token-zork"
        tok = os.path.join(self.base, "token-moved")
        with open(tok, "w") as f:
            f.write(secret + "\n")
        os.chmod(tok, 0o600)
        for prefix, status, then in [
                ("moved", f"HTTP 301, a redirect to http://127.0.0.2:{self.odd.other_port}/moved/v2/",
                 "(not followed: give the final URL)"),
                ("locked", "HTTP 403, the token was refused", "")]:
            with self.odd_machine(prefix, prefix, "remote_token_file=" + tok) as m:
                views = read_views(m.mnt)
                deadline = time.time() + 30
                while "read-only for this session" not in m.output() and time.time() < deadline:
                    time.sleep(0.1)
                st = m.stats()
                log = m.output()
            self.assertGreater(len(views), 3)
            self.assertEqual(st["remote_hits"], 0)
            self.assertNotIn("bad object", log)
            self.assertNotIn("paused for", log)
            self.assertNotIn(secret, log)
            url = self.odd.url(prefix)
            self.assertEqual(log.count(f"remote cache: {url}: GET: {status}"), 1, log)
            self.assertIn(then + "; a miss: converted locally (logged once)", log)
            self.assertEqual(log.count(f"remote cache: {url}: HEAD: {status}"), 1, log)
            self.assertEqual(log.count("read-only for this session"), 1, log)
            sent = [r for r in self.odd.requests if r[1].startswith(f"/{prefix}/")]
            self.assertEqual([r for r in sent if r[0] == "PUT"], [])
            self.assertTrue(all(r[2] == "Bearer " + secret for r in sent), sent)
        self.assertEqual(self.odd.elsewhere, [])

    def test_put_refused_405_reads_go_on(self):
        """A server that takes no PUT (405: no dav module, a static mirror)
        makes the session read-only; the reads after it still come from the
        server instead of backing off for 30 s and converting."""
        views_a, _ = self.machine_a("np")
        shutil.copytree(os.path.join(self.nginx.root, "np"), os.path.join(self.nginx.root, "noput"))
        src = os.path.join(self.base, "noput", "src")
        copy_props(src)
        write_grid(os.path.join(src, "extra.obj"), 12)  # on no server: converted, then a PUT
        with Mount(src, os.path.join(self.base, "noput", "mnt"), os.path.join(self.base, "noput", "cache"),
                   "remote=" + self.odd.url("noput"), PATIENT) as m:
            with open(os.path.join(m.mnt, "extra.fmd"), "rb") as f:
                f.read()
            deadline = time.time() + 30
            while not any(r[0] == "PUT" and r[1].startswith("/noput/") for r in self.odd.requests):
                self.assertLess(time.time(), deadline, m.output())
                time.sleep(0.1)
            time.sleep(0.5)
            views = read_views(m.mnt)
            st = m.stats()
            log = m.output()
        views = {k: v for k, v in views.items() if not k.startswith("extra.")}
        self.assertEqual(views, views_a)
        self.assertEqual(st["conversions"], 1, log)  # extra.obj only
        self.assertGreaterEqual(st["remote_hits"], 3)
        self.assertEqual(log.count(f"remote cache: {self.odd.url('noput')}: PUT: HTTP 405, "
                                   "the method is not allowed there; read-only for this session"), 1, log)
        self.assertNotIn("paused for", log)
        puts = [r for r in self.odd.requests if r[0] == "PUT" and r[1].startswith("/noput/")]
        self.assertEqual(len(puts), 1, puts)

    def test_failed_upload_pauses_uploads_only(self):
        """Issue 35, item 1: a server whose disk is full answers every PUT
        with 500 but still serves what it holds.  The failed PUT pauses the
        uploads (said once, counted as an upload back-off); the reads after
        it still come from the server instead of converting."""
        views_a, _ = self.machine_a("fp")
        shutil.copytree(os.path.join(self.nginx.root, "fp"), os.path.join(self.nginx.root, "fullput"))
        src = os.path.join(self.base, "fullput", "src")
        copy_props(src)
        write_grid(os.path.join(src, "extra.obj"), 12)  # on no server: converted, then a PUT
        with Mount(src, os.path.join(self.base, "fullput", "mnt"),
                   os.path.join(self.base, "fullput", "cache"), "remote=" + self.odd.url("fullput"), PATIENT) as m:
            with open(os.path.join(m.mnt, "extra.fmd"), "rb") as f:
                f.read()
            deadline = time.time() + 30
            while m.stats()["remote_upload_backoffs"] == 0:
                self.assertLess(time.time(), deadline, m.output())
                time.sleep(0.1)
            views = read_views(m.mnt)
            st = m.stats()
            log = m.output()
        views = {k: v for k, v in views.items() if not k.startswith("extra.")}
        self.assertEqual(views, views_a)
        self.assertEqual(st["conversions"], 1, log)  # extra.obj only
        self.assertGreaterEqual(st["remote_hits"], 3)
        self.assertEqual((st["remote_read_backoffs"], st["remote_upload_backoffs"]), (0, 1), st)
        self.assertEqual(st["remote_errors"], 1, st)
        self.assertEqual(log.count(f"remote cache: {self.odd.url('fullput')}: PUT: HTTP 500, server error; "
                                   "uploads paused for 30 s (reads go on)"), 1, log)
        self.assertEqual(log.count("paused for"), 1, log)
        puts = [r for r in self.odd.requests if r[0] == "PUT" and r[1].startswith("/fullput/")]
        self.assertEqual(len(puts), 1, puts)  # the rest of the queue waits out the pause

    def test_429_backs_off_for_retry_after(self):
        """A 429 (a rate-limiting proxy) with Retry-After: 120 is an overload,
        not a miss: reads skip the server for those 120 s, said once, rather
        than asked again by every read; so do uploads, on their own 429."""
        with self.odd_machine("busy", "busy") as m:
            views = read_views(m.mnt)
            time.sleep(0.3)
            st = m.stats()
            log = m.output()
        self.assertGreater(len(views), 3)
        self.assertGreater(st["conversions"], 0)
        self.assertEqual(log.count(f"remote cache: {self.odd.url('busy')}: GET: HTTP 429, "
                                   "too many requests; reads paused for 120 s (uploads go on)"), 1, log)
        asked = [r for r in self.odd.requests if r[1].startswith("/busy/")]
        gets = [r for r in asked if r[0] == "GET"]
        heads = [r for r in asked if r[0] == "HEAD"]
        # the models of props may each have one in flight before the first answer
        self.assertIn(len(gets), (1, 2, 3), asked)
        # the one upload thread: its first HEAD's 429 pauses the uploads
        self.assertLessEqual(len(heads), 1, asked)
        self.assertEqual(len(gets) + len(heads), len(asked), asked)
        self.assertEqual(st["remote_errors"], len(asked), st)
        self.assertEqual(st["remote_read_backoffs"], 1, st)
        self.assertEqual(st["remote_upload_backoffs"], len(heads), st)

    def test_slow_upload_cut_short_at_unmount(self):
        """An upload a slow server takes in at 160 KB/s (never idle, so the
        data timeout's stall check never fires) is cut short at unmount: the
        daemon exits within a few seconds, not when the last byte went, and
        says so."""
        src = os.path.join(self.base, "trickle", "src")
        os.makedirs(src)
        write_grid(os.path.join(src, "g.obj"), 300)  # a .dem of ~12 MB
        with Mount(src, os.path.join(self.base, "trickle", "mnt"),
                   os.path.join(self.base, "trickle", "cache"),
                   "remote=" + self.odd.url("trickle"), PATIENT, "formats=dem") as m:
            with open(os.path.join(m.mnt, "g.dem"), "rb") as f:
                size = len(f.read())
            deadline = time.time() + 60
            while not any(r[0] == "PUT" and r[1].startswith("/trickle/v2/view/")
                          for r in self.odd.requests):
                self.assertLess(time.time(), deadline, m.output())
                time.sleep(0.1)
            time.sleep(1)
            t0 = time.time()
            subprocess.run(["fusermount3", "-u", m.mnt], check=True)
            m.proc.wait(timeout=120)
            elapsed = time.time() - t0
            log = m.output()
        self.assertGreater(size, 10 << 20)  # well above what socket buffers hold
        self.assertLess(elapsed, 5, log)
        self.assertIn(f"remote cache: {self.odd.url('trickle')}: PUT of {size + REC} bytes "
                      "cut short at exit", log)

    def test_slow_server_bounded_by_data_timeout(self):
        views_a, _ = self.machine_a("slowsrc")  # read back slowly as /slow/
        with self.machine("s", "slow", "remote_data_timeout_s=1", "remote_timeout_ms=150") as m:
            worst, views = 0.0, {}
            for d, dirs, files in os.walk(m.mnt):
                for f in sorted(files):
                    if f.rsplit(".", 1)[-1] in FORMATS:
                        p = os.path.join(d, f)
                        t0 = time.time()
                        with open(p, "rb") as fh:
                            views[os.path.relpath(p, m.mnt)] = fh.read()
                        worst = max(worst, time.time() - t0)
            st = m.stats()
        self.assertEqual(views, views_a)
        self.assertGreaterEqual(st["remote_errors"], 1)
        self.assertEqual(st["remote_hits"], 0)
        self.assertGreater(st["conversions"], 0)
        # one timed-out GET (1 s + connect), then the back-off skips the
        # server; the rest is a local conversion of this small model
        self.assertLess(worst, 1.15 + 3.0)

    def test_server_error_backs_off(self):
        with self.machine("err", "err") as m:
            views = read_views(m.mnt)
            deadline = time.time() + 30
            while m.stats()["remote_upload_backoffs"] == 0 and time.time() < deadline:
                time.sleep(0.1)  # the upload thread's HEAD
            time.sleep(0.3)
            st = m.stats()
            log = m.output()
        self.assertGreater(len(views), 3)
        self.assertGreater(st["conversions"], 0)
        # the first 503 starts a 30 s back-off: no request is sent after it
        # (the two models of props may each have one in flight already)
        self.assertIn(st["remote_errors"], (2, 3, 4), st)  # and one HEAD
        self.assertEqual((st["remote_read_backoffs"], st["remote_upload_backoffs"]), (1, 1), st)
        self.assertEqual(st["remote_uploads"], 0)
        # one back-off a direction: the reads' GET, the uploads' HEAD
        self.assertEqual(log.count("paused for"), 2, log)
        self.assertEqual(log.count("GET: HTTP 503, server error; reads paused for 30 s (uploads go on)"), 1, log)
        self.assertEqual(log.count("HEAD: HTTP 503, server error; uploads paused for 30 s (reads go on)"), 1, log)
        with open(self.nginx.access) as f:
            self.assertEqual(len([l for l in f if " /err/" in l]), st["remote_errors"])

    def test_put_refused_makes_session_read_only(self):
        with self.machine("deny", "deny") as m:
            views = read_views(m.mnt)
            deadline = time.time() + 30
            while m.stats()["remote_errors"] == 0 and time.time() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)
            st = m.stats()
            log = m.output()
        self.assertGreater(len(views), 3)
        self.assertEqual(st["remote_errors"], 1, st)
        self.assertEqual(st["remote_uploads"], 0)
        self.assertEqual(log.count("read-only for this session"), 1, log)
        with open(self.nginx.access) as f:
            puts = [l for l in f if '"PUT /deny/' in l]
        self.assertEqual(len(puts), 1, puts)
        self.assertIn('" 403 ', puts[0])

    def test_read_only_never_puts(self):
        with self.machine("ro", "ro", "remote_read_only") as m:
            views = read_views(m.mnt)
            time.sleep(0.5)
            st = m.stats()
        self.assertGreater(len(views), 0)
        self.assertEqual(st["remote_uploads"], 0)
        self.assertEqual(objects(self.nginx.root, "ro", "view"), [])
        with open(self.nginx.access) as f:
            puts = [l for l in f if '"PUT /ro/' in l]
        self.assertEqual(puts, [])

    def test_token_never_shown(self):
        secret = "s3cr3t-token-xyzzy"
        tok = os.path.join(self.base, "token")
        with open(tok, "w") as f:
            f.write(secret + "\n")
        os.chmod(tok, 0o600)
        with self.machine("tok", "tok", "remote_token_file=" + tok) as m:
            read_views(m.mnt)
            wait_drained(m)
            raw = os.getxattr(m.mnt, "user.meshfs.stats").decode()
            log = m.output()
        self.assertNotIn(secret, raw)
        self.assertNotIn(secret, log)
        # and the server did get it, on reads and uploads alike
        with open(os.path.join(self.nginx.base, "auth.log")) as f:
            lines = f.read().splitlines()
        for method in ("GET", "HEAD", "PUT"):
            sent = [l for l in lines if l.startswith(method + " /tok/")]
            self.assertGreater(len(sent), 0, (method, lines))
            for l in sent:
                self.assertTrue(l.endswith("Bearer " + secret), l)

    def test_big_uploads_keep_rss_flat(self):
        """8 views of ~100 MB each go up while the daemon's peak RSS stays
        far below one of them: the upload streams the entry file (one upload
        thread, so the 8 are sent one after another, each streamed)."""
        src = os.path.join(self.base, "big", "src")
        os.makedirs(src)
        # a 845 x 845 grid: ~714k vertices, whose .dem is ~100 MB
        write_grid(os.path.join(src, "grid0.obj"), 845)
        for i in range(1, 8):  # other paths, so other keys: 8 conversions, 8 uploads
            os.link(os.path.join(src, "grid0.obj"), os.path.join(src, f"grid{i}.obj"))
        with Mount(src, os.path.join(self.base, "big", "mnt"), os.path.join(self.base, "big", "cache"),
                   "remote=" + self.nginx.url("big"), PATIENT, "formats=dem", "convert_jobs=2") as m:
            base_hwm = vm_kib(m.proc.pid, "VmHWM")

            def read(i):
                n = 0
                with open(os.path.join(m.mnt, f"grid{i}.dem"), "rb") as f:
                    while True:
                        b = f.read(1 << 20)
                        if not b:
                            return n
                        n += len(b)
            with concurrent.futures.ThreadPoolExecutor(8) as ex:
                sizes = list(ex.map(read, range(8)))
            deadline = time.time() + 120
            st = wait_drained(m, timeout=120)
            while st["remote_uploads"] < 16 and st["remote_dropped"] == 0 and time.time() < deadline:
                time.sleep(0.1)  # 8 views and 8 manifests
                st = wait_drained(m, timeout=120)
            hwm = vm_kib(m.proc.pid, "VmHWM")
            log = m.output()
        for n in sizes:
            self.assertGreater(n, 90 << 20)
        views = objects(self.nginx.root, "big", "view")
        self.assertEqual(len(views), 8, log)
        self.assertEqual(sorted(os.path.getsize(p) - REC for p in views), sorted(sizes))
        self.assertEqual(st["remote_dropped"], 0)
        self.assertGreaterEqual(st["remote_bytes_up"], sum(sizes))
        # the daemon only (workers are other processes): far below 8 x 100 MB,
        # and below one view
        self.assertLess(hwm, 150 << 10, (base_hwm, hwm))
        self.assertLess(hwm - base_hwm, 64 << 10, (base_hwm, hwm))

    def test_token_not_in_ps(self):
        secret = "ps-visible-token-plugh"
        tok = os.path.join(self.base, "token-ps")
        with open(tok, "w") as f:
            f.write(secret + "\n")
        os.chmod(tok, 0o600)
        with self.machine("tokps", "tokps", "remote_token_file=" + tok) as m:
            read_views(m.mnt)
            wait_drained(m)
            # while the daemon and its workers (the fork server) are alive
            seen, checked = [], 0
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                for what in ("cmdline", "environ"):
                    try:
                        with open(f"/proc/{pid}/{what}", "rb") as f:
                            data = f.read()
                    except OSError:
                        continue
                    checked += what == "cmdline" and pid == str(m.proc.pid)
                    if secret.encode() in data:
                        seen.append((pid, what))
            with open(f"/proc/{m.proc.pid}/cmdline", "rb") as f:
                cmd = f.read()
        self.assertEqual(checked, 1)
        self.assertIn(b"remote_token_file=" + tok.encode(), cmd)
        self.assertEqual(seen, [])

    def test_convert_uploads_for_a_mount(self):
        src = os.path.join(self.base, "cli", "src")
        copy_props(src)
        out = os.path.join(self.base, "cli", "out")
        p = run([tool("meshfs-convert"), "-q", "-f", "fmd:gmf", "--cache-dir",
                 os.path.join(self.base, "cli", "cache"), "--remote", self.nginx.url("cli"), *PATIENT_ARGS,
                 "-o", out, src], timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        # the run ends after its uploads: objects are there at exit
        self.assertGreater(len(objects(self.nginx.root, "cli", "view")), 0)
        self.assertGreater(len(objects(self.nginx.root, "cli", "manifest")), 0)
        with self.machine("cli-b", "cli", "formats=fmd:gmf") as m:
            views = read_views(m.mnt)
            st = m.stats()
        self.assertEqual(st["conversions"], 0)
        self.assertGreater(st["remote_hits"], 0)
        written = {}
        for d, dirs, files in os.walk(out):
            for f in files:
                if f.rsplit(".", 1)[-1] in ("fmd", "gmf"):
                    written[os.path.relpath(os.path.join(d, f), out)] = open(os.path.join(d, f), "rb").read()
        self.assertGreater(len(written), 0)
        self.assertEqual(views, written)

    def test_absent_inputs_decide_what_a_remote_object_serves(self):
        """Issue 28 through the remote tier: machine A converts a crate
        without its .mtl and texture and uploads; machine B, whose copy has
        them, must not take A's white views (its check of A's manifest finds
        an absent input there now) and converts; machine C, whose copy lacks
        them as A's did, converts nothing."""
        crate = os.path.join(SOURCE, "examples", "assets", "crate")
        def tree(name, with_mtl):
            src = os.path.join(self.base, name, "src")
            os.makedirs(src)
            shutil.copy(os.path.join(crate, "crate.obj"), src)
            if with_mtl:
                shutil.copy(os.path.join(crate, "crate.mtl"), src)
                shutil.copytree(os.path.join(crate, "textures"), os.path.join(src, "textures"))
            return src
        src_a = tree("absent-a", False)
        p = run([tool("meshfs-convert"), "-q", "--cache-dir", os.path.join(self.base, "absent-a", "cache"),
                 "--remote", self.nginx.url("absent"), *PATIENT_ARGS, "-o",
                 os.path.join(self.base, "absent-a", "out"), src_a], timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        white = open(os.path.join(self.base, "absent-a", "out", "crate.tex"), "rb").read()
        self.assertEqual(white[:8], (1).to_bytes(4, "little") * 2)  # the 1x1 fallback
        self.assertGreater(len(objects(self.nginx.root, "absent", "manifest")), 0)
        for name, with_mtl, conversions in [("absent-b", True, 1), ("absent-c", False, 0)]:
            src = tree(name, with_mtl)
            with Mount(src, os.path.join(self.base, name, "mnt"), os.path.join(self.base, name, "cache"),
                       "remote=" + self.nginx.url("absent"), PATIENT) as m:
                tex = open(os.path.join(m.mnt, "crate.tex"), "rb").read()
                st = m.stats()
            self.assertEqual(st["conversions"], conversions, name)
            if with_mtl:
                self.assertEqual(tex[:8], (8).to_bytes(4, "little") * 2)  # crate.png, 8x8
            else:
                self.assertEqual(tex, white)
                self.assertGreater(st["remote_hits"], 0)

    def test_convert_says_uploads_not_sent(self):
        """A server that fails at upload time (503 on HEAD) backs off, so the
        rest of the queue is skipped: the run still exits 0 (its outputs are
        fine) but says how many objects did not reach the server, naming it,
        rather than ending as if they had."""
        src = os.path.join(self.base, "nohead", "src")
        copy_props(src)
        p = run([tool("meshfs-convert"), "-q", "-f", "fmd:gmf", "--cache-dir",
                 os.path.join(self.base, "nohead", "cache"), "--remote", self.odd.url("nohead"), *PATIENT_ARGS,
                 "-o", os.path.join(self.base, "nohead", "out"), src], timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        url = self.odd.url("nohead")
        self.assertIn(f"remote cache: {url}: HEAD: HTTP 503, server error; uploads paused for 30 s (reads go on)",
                      p.stderr)
        heads = [r for r in self.odd.requests if r[0] == "HEAD" and r[1].startswith("/nohead/")]
        self.assertEqual(len(heads), 1, heads)
        m = re.search(rf"meshfs-convert: remote cache: {re.escape(url)}: (\d+) uploads not sent "
                      r"\(the errors above\); the server lacks those objects\n", p.stderr)
        self.assertIsNotNone(m, p.stderr)
        self.assertGreaterEqual(int(m.group(1)), 3)  # a manifest a model at least
        # a run whose uploads all went says nothing of the kind
        p = run([tool("meshfs-convert"), "-q", "-f", "fmd:gmf", "--cache-dir",
                 os.path.join(self.base, "nohead", "cache2"), "--remote", self.nginx.url("sent"), *PATIENT_ARGS,
                 "-o", os.path.join(self.base, "nohead", "out2"), src], timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("not sent", p.stderr)
        self.assertEqual(len(objects(self.nginx.root, "sent", "manifest")), 3)

    def test_put_413_said_once_others_still_sent(self):
        """A 413 (client_max_body_size) drops that object only: said once,
        naming the server, every other upload still tried, reads not
        backed off."""
        src = os.path.join(self.base, "toobig", "src")
        copy_props(src)
        p = run([tool("meshfs-convert"), "-q", "-f", "fmd:gmf", "--cache-dir",
                 os.path.join(self.base, "toobig", "cache"), "--remote", self.odd.url("toobig"), *PATIENT_ARGS,
                 "-o", os.path.join(self.base, "toobig", "out"), src], timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr.count(f"remote cache: {self.odd.url('toobig')}: PUT: HTTP 413, too large "
                                        "for the server; such objects are not uploaded (logged once)"),
                         1, p.stderr)
        self.assertNotIn("paused for", p.stderr)
        puts = [r for r in self.odd.requests if r[0] == "PUT" and r[1].startswith("/toobig/")]
        self.assertGreaterEqual(len(puts), 3, puts)  # a manifest a model at least

    def test_convert_no_cache_uploads_what_a_cached_run_does(self):
        """--no-cache removes each model's entries once it is resolved, but
        not while a remote upload queue still has to open them: the same
        objects reach the server as from a run with a cache of its own."""
        src = os.path.join(self.base, "nc", "src")
        copy_props(src)
        names = {}
        for prefix, cache in (("nc-cached", ["--cache-dir", os.path.join(self.base, "nc", "c")]),
                              ("nc-none", ["--no-cache"])):
            p = run([tool("meshfs-convert"), "-q", "-f", "fmd:gmf"] + cache +
                    ["--remote", self.nginx.url(prefix), *PATIENT_ARGS, "-o",
                     os.path.join(self.base, "nc", "out-" + prefix), src], timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            names[prefix] = [os.path.relpath(x, os.path.join(self.nginx.root, prefix))
                             for kind in ("view", "manifest")
                             for x in objects(self.nginx.root, prefix, kind)]
        self.assertGreater(len(names["nc-cached"]), 1)
        self.assertEqual(names["nc-none"], names["nc-cached"])
        with self.machine("nc-b", "nc-none", "formats=fmd:gmf") as m:
            read_views(m.mnt)
            st = m.stats()
        self.assertEqual(st["conversions"], 0)

    def test_cache_warm_uploads_for_a_mount(self):
        src = os.path.join(self.base, "warm", "src")
        copy_props(src)
        p = run([tool("meshfs-cache"), "--cache-dir", os.path.join(self.base, "warm", "cache"),
                 "warm", "-q", "--remote", self.nginx.url("warm"), *PATIENT_ARGS, src], timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertGreater(len(objects(self.nginx.root, "warm", "view")), 0)
        with self.machine("warm-b", "warm") as m:
            views = read_views(m.mnt)
            st = m.stats()
        self.assertGreater(len(views), 3)
        self.assertEqual(st["conversions"], 0)
        self.assertGreaterEqual(st["remote_hits"], len(objects(self.nginx.root, "warm", "manifest")))
        p = run([tool("meshfs-cache"), "--cache-dir", os.path.join(self.base, "warm", "cache"),
                 "warm", "--remote", "gopher://x", src])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--remote", p.stderr)

    def test_convert_bad_remote_exit_2(self):
        for args, text in [(["--remote", "ftp://x/y"], "--remote"),
                           (["--remote", self.nginx.url("x"), "--remote-timeout-ms", "0"],
                            "--remote-timeout-ms"),
                           (["--remote-read-only"], "--remote")]:
            p = run([tool("meshfs-convert"), "-o", os.path.join(self.base, "cli-bad"), *args, PROPS])
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(text, p.stderr)

    def bad_mount(self, *opts):
        src = os.path.join(self.base, "opt-src")
        mnt = os.path.join(self.base, "opt-mnt")
        os.makedirs(src, exist_ok=True)
        os.makedirs(mnt, exist_ok=True)
        p = run([tool("meshfs"), "-f", "-o", ",".join(["cache_dir=" + self.base + "/opt-cache"] + list(opts)),
                 src, mnt], timeout=30)
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", mnt])
        return p

    def test_bad_options_exit_2(self):
        url = "remote=" + self.nginx.url("x")
        for opts, text in [
            (["remote=ftp://host/x"], "-o remote"),
            (["remote=http://"], "-o remote"),
            ([url, "remote_timeout_ms=abc"], "remote_timeout_ms"),
            ([url, "remote_timeout_ms=0"], "remote_timeout_ms"),
            ([url, "remote_data_timeout_s=-1"], "remote_data_timeout_s"),
            ([url, "remote_token_file=/nonexistent/token"], "remote_token_file"),
            (["remote_read_only"], "remote"),
        ]:
            p = self.bad_mount(*opts)
            self.assertEqual(p.returncode, 2, (opts, p.stderr))
            self.assertIn(text, p.stderr, opts)
        # a password in a refused URL is not echoed
        for bad, text in [("ftp://meshfs:hunter2pw@host/x", "-o remote=ftp://host/x: must start"),
                          ("http://meshfs:hunter2pw@host/x#y", "-o remote=http://host/x#y: spaces")]:
            p = self.bad_mount("remote=" + bad)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(text, p.stderr)
            self.assertNotIn("hunter2pw", p.stderr + p.stdout)
        p = run([tool("meshfs-convert"), "-o", os.path.join(self.base, "cli-bad"), "--remote",
                 "gopher://meshfs:hunter2pw@host/x", PROPS])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--remote=gopher://host/x: must start", p.stderr)
        self.assertNotIn("hunter2pw", p.stderr)

    def test_token_file_readable_by_others_refused(self):
        # any access by group or others, not only reading (meshfs.1)
        secret = "another-secret-value"
        for mode in (0o644, 0o620):
            tok = os.path.join(self.base, "token%o" % mode)
            with open(tok, "w") as f:
                f.write(secret + "\n")
            os.chmod(tok, mode)
            p = self.bad_mount("remote=" + self.nginx.url("x"), "remote_token_file=" + tok)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("remote_token_file=%s: mode %04o gives group or others access to it"
                          % (tok, mode), p.stderr)
            self.assertNotIn(secret, p.stderr + p.stdout)



class Hostile(Served):
    """A fake server that is slow or sends too much, on 127.0.0.1; the first
    path component picks how (the rest of the path is never looked at):
    /slow404/ answers 404 after SLOW_S seconds, /huge/ answers 200 with a
    Content-Length of 1 TiB and sends zeros until the client hangs up,
    /endless/ answers 200 with a chunked body that never ends, /endless_fast/
    the same at full speed; but for /slow404/, a HEAD is answered 200 at once
    (the object is there: no PUT follows).  self.requests: (method, path, arrival time)."""
    SLOW_S = 4.5  # the finding's server: under the 5 s data timeout
    PIECE = b"\0" * 65536

    def __init__(self):
        self.requests = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                outer.requests.append((self.command, self.path, time.time()))
                mode = self.path.split("/")[1]
                try:
                    if self.command == "HEAD" and mode != "slow404":
                        self.send_response(200)  # "already there": no PUT follows
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                    elif mode == "slow404":
                        time.sleep(outer.SLOW_S)
                        self.send_response(404)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                    elif mode == "huge":
                        self.send_response(200)
                        self.send_header("Content-Length", str(1 << 40))
                        self.end_headers()
                        while True:
                            self.wfile.write(outer.PIECE)
                            time.sleep(0.002)  # ~30 MB/s: a sampler sees each file grow
                    elif mode.startswith("endless"):
                        self.send_response(200)
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        chunk = b"%x\r\n" % len(outer.PIECE) + outer.PIECE + b"\r\n"
                        while True:
                            self.wfile.write(chunk)
                            if mode == "endless":
                                time.sleep(0.002)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True
            do_HEAD = do_GET

        super().__init__(Handler)

    def seen(self, prefix):
        return [r for r in self.requests if r[1].startswith(f"/{prefix}/")]


class TmpSampler:
    """The bytes in a cache's tmp/ (the downloads' and the workers' files),
    sampled every millisecond while in a with block; self.peak the most."""

    def __init__(self, cache):
        self.tmp = os.path.join(cache, "tmp")
        self.peak, self.samples = 0, 0
        self.stop = threading.Event()

    def size(self):
        total = 0
        for d, dirs, files in os.walk(self.tmp):
            for f in files:
                try:
                    total += os.lstat(os.path.join(d, f)).st_size
                except FileNotFoundError:
                    pass
        return total

    def loop(self):
        while True:
            self.peak = max(self.peak, self.size())
            self.samples += 1
            self.started.set()
            if self.stop.wait(0.001):
                return

    def __enter__(self):
        # the with block starts only once a first sample is taken, and the
        # loop takes one more after it ends: a busy machine may sample the
        # block itself a few times only, but never zero times unseen
        self.started = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()
        self.started.wait()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        return False


MIB = 1 << 20


class RemoteSlowOrHugeTest(unittest.TestCase):
    """A hostile or broken server (issue 33, finding 4) costs a cold read at
    most the remote timeout once, then nothing while the tier backs off; its
    oversized answers never fill the cache past its cap nor past an
    object's limit; the views are converted locally with the right bytes."""
    MODELS = ("m5", "m6", "m7", "m8", "m9", "m10")

    @classmethod
    def setUpClass(cls):
        cls.td = tempdir()
        cls.base = cls.td.name
        cls.srv = Hostile()
        cls.src = os.path.join(cls.base, "src")
        os.makedirs(cls.src)
        for name in cls.MODELS:
            write_grid(os.path.join(cls.src, name + ".obj"), int(name[1:]))
        # the bytes a mount with no remote makes
        with Mount(cls.src, os.path.join(cls.base, "ref", "mnt"), os.path.join(cls.base, "ref", "cache"),
                   "formats=fmd") as m:
            cls.want = {n: cls.read(m, n) for n in cls.MODELS}

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.td.cleanup()

    @staticmethod
    def read(m, name):
        """One model's view, opened by name: no listing, so no prefetch asks
        the server on its own."""
        with open(os.path.join(m.mnt, name + ".fmd"), "rb") as f:
            return f.read()

    def mount(self, name, prefix, *opts):
        return Mount(self.src, os.path.join(self.base, name, "mnt"), os.path.join(self.base, name, "cache"),
                     "formats=fmd", "remote=" + self.srv.url(prefix), *patient(opts))

    def test_slow_404_backs_off(self):
        """A 404 after 4.5 s (within the 5 s data timeout: before, every cold
        read waited for it, and it counted as a plain miss) with
        remote_timeout_ms=300: the first cold read gives up on it after
        0.3 s, counts an error and backs off; the cold reads of the other
        models never ask the server again."""
        with self.mount("slow", "slow404", "remote_timeout_ms=300") as m:
            t0 = time.time()
            first = self.read(m, self.MODELS[0])
            took_first = time.time() - t0
            asked_first = len([r for r in self.srv.seen("slow404") if r[0] == "GET"])
            worst, views = 0.0, {self.MODELS[0]: first}
            for name in self.MODELS[1:]:
                t0 = time.time()
                views[name] = self.read(m, name)
                worst = max(worst, time.time() - t0)
            deadline = time.time() + 30
            while m.stats()["remote_upload_backoffs"] == 0 and time.time() < deadline:
                time.sleep(0.1)  # the upload thread's HEAD: just as late
            time.sleep(0.5)
            st = m.stats()
            log = m.output()
        self.assertEqual(views, self.want)
        self.assertEqual(asked_first, 1, self.srv.requests)
        # one GET in all: the other models' cold reads skip the server; and
        # one HEAD, which pauses the uploads the same way
        self.assertEqual(sorted(r[0] for r in self.srv.seen("slow404")), ["GET", "HEAD"],
                         self.srv.requests)
        self.assertEqual(st["remote_errors"], 2, st)
        self.assertEqual((st["remote_read_backoffs"], st["remote_upload_backoffs"]), (1, 1), st)
        self.assertEqual(st["remote_hits"], 0, st)
        self.assertEqual(st["conversions"], len(self.MODELS), st)
        for what, paused in (("GET", "reads paused for 30 s (uploads go on)"),
                             ("HEAD", "uploads paused for 30 s (reads go on)")):
            self.assertEqual(log.count(f"remote cache: {self.srv.url('slow404')}: {what}: no answer within "
                                       f"300 ms (remote_timeout_ms); {paused}"), 1, log)
        # generous bounds, each well under the server's 4.5 s: no read waited for it
        self.assertLess(took_first, Hostile.SLOW_S - 1, log)
        self.assertLess(worst, Hostile.SLOW_S - 1, log)

    def test_concurrent_oversized_answers_stay_under_the_cap(self):
        """Six cold reads at once, each answered with far more than an 8 MiB
        cache may hold (a 1 TiB Content-Length; an endless chunked body):
        the downloads in tmp/ count against the cap together, so tmp/ never
        holds more than it; the oversized Content-Length is refused before
        its body is read, and said once."""
        cap = 8 * MIB
        for prefix in ("huge", "endless"):
            with self.subTest(prefix):
                with self.mount("cap-" + prefix, prefix, "cache_size=8M", "remote_data_timeout_s=60") as m:
                    with TmpSampler(m.cache) as s:
                        with concurrent.futures.ThreadPoolExecutor(len(self.MODELS)) as ex:
                            views = dict(zip(self.MODELS, ex.map(lambda n: self.read(m, n), self.MODELS)))
                    st = m.stats()
                    log = m.output()
                self.assertEqual(views, self.want)
                # sampled before, during and after the reads (a count of
                # 16 in all was seen in CI under load: no fixed rate holds)
                self.assertGreaterEqual(s.samples, 3)
                # the cap, plus the workers' own outputs of these small models
                self.assertLessEqual(s.peak, cap + MIB, (s.peak, log))
                self.assertEqual(st["remote_hits"], 0, st)
                # one conversion a model, and one more for each view the cap
                # took before its reader opened it: as soon as it was stored
                # (the downloads hold most of the 8 MiB: docs/cache.md,
                # views larger than the free space), or by another
                # download's room made right after (an eviction; the read
                # converts again rather than fail, issue 33)
                self.assertGreaterEqual(st["conversions"], len(self.MODELS), st)
                self.assertLessEqual(st["conversions"],
                                     len(self.MODELS) + st["views_evicted_at_store"] + st["cache_evictions"],
                                     st)
                url = self.srv.url(prefix)
                if prefix == "huge":
                    self.assertLess(s.peak, MIB, (s.peak, log))  # nothing of the bodies kept
                    self.assertEqual(log.count(f"remote cache: {url}: GET: an answer of {1 << 40} bytes, "
                                               f"over the cache's cap ({cap} bytes); refused before "
                                               "reading it; a miss: converted locally (logged once)"), 1, log)
                    self.assertEqual(st["remote_errors"], len(self.MODELS), st)
                else:
                    said = log.count(f"remote cache: {url}: GET: ")
                    self.assertGreaterEqual(said, 1, log)
                    self.assertLessEqual(said, 2, log)  # each reason once: no room, too long
                    self.assertLessEqual(log.count(f"{url}: GET: an answer longer than the cache's cap"), 1, log)
                    self.assertLessEqual(log.count(f"{url}: GET: no room for an answer past "), 1, log)

    def test_endless_body_cut_at_a_manifests_limit(self):
        """With a cache of 100 MiB, an endless body for a manifest is cut at
        a manifest's limit (64 MiB and its record), not at the cache's cap;
        said once for two reads."""
        limit = (64 << 20) + REC
        with self.mount("limit", "endless_fast", "cache_size=100M", "remote_data_timeout_s=60") as m:
            with TmpSampler(m.cache) as s:
                views = {n: self.read(m, n) for n in self.MODELS[:2]}
            st = m.stats()
            log = m.output()
        self.assertEqual(views, {n: self.want[n] for n in self.MODELS[:2]})
        self.assertLessEqual(s.peak, limit + MIB, (s.peak, log))
        self.assertEqual(st["remote_errors"], 2, st)
        self.assertEqual(log.count(f"remote cache: {self.srv.url('endless_fast')}: GET: an answer longer "
                                   f"than the limit of a manifest ({limit} bytes); cut there; a miss: "
                                   "converted locally (logged once)"), 1, log)


if __name__ == "__main__":
    run_tests()
