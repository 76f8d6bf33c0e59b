"""Issue 35 item 2: nothing an outage skipped is lost.  Uploads the server
could not take stay owed in the cache's owed/ folder; the running mount
sends them once the server answers again, `meshfs-cache push` sends what a
batch run left, and the list's bound drops (said, counted) rather than
grows.  A real nginx on 127.0.0.1 (nginx.py), killed and started again on
the same port; real mounts, each machine its own SRC path and cache."""
import json
import os
import re
import socket
import subprocess
import time
import unittest

from common import run, run_tests, tempdir, tool
from mount import Mount
from nginx import NGINX, Nginx
from test_remote import PATIENT, PATIENT_ARGS, copy_props, objects, read_views, write_grid


def restart(n):
    """n started again on its port, with its config and root."""
    n.stop()
    n.proc = subprocess.Popen([NGINX, "-p", n.base, "-e", n.base + "/error.log", "-c",
                               os.path.join(n.base, "nginx.conf")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.time() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", n.port), timeout=0.2).close()
            return
        except OSError:
            if n.proc.poll() is not None or time.time() > deadline:
                raise AssertionError("nginx did not start again: " +
                                     open(n.base + "/error.log").read())
            time.sleep(0.05)


def wait_for(m, what, cond, timeout=120):
    deadline = time.time() + timeout
    while True:
        st = m.stats()
        if cond(st):
            return st
        if time.time() > deadline:
            raise AssertionError(f"{what}: {st}\n{m.output()}")
        time.sleep(0.2)


def cache_json(cache, *args):
    p = run([tool("meshfs-cache"), "--cache-dir", cache, "--json", *args])
    return p, (json.loads(p.stdout) if p.stdout.strip() else None)


def owed_files(cache):
    d = os.path.join(cache, "owed")
    return sorted(f for f in os.listdir(d) if re.fullmatch(r"[0-9a-f]{32}\.[em]", f)) \
        if os.path.isdir(d) else []


class RemoteOwedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(NGINX):
            raise unittest.SkipTest("nginx is not installed (scripts/setup installs nginx-light)")
        cls.td = tempdir()
        cls.base = cls.td.name

    @classmethod
    def tearDownClass(cls):
        cls.td.cleanup()

    def server(self, name):
        n = Nginx(os.path.join(self.base, name))
        self.addCleanup(n.stop)
        return n

    def tree(self, name, extra=3):
        """The props (cone, tetra, a 60x60 grid) and `extra` more grids in
        later/ (a folder of their own: listing the top converts nothing
        there): models whose views are embedded in their model entry, and
        some with view objects of their own."""
        src = os.path.join(self.base, name, "some", name, "src")
        copy_props(src)
        if extra:
            os.makedirs(os.path.join(src, "later"))
        for i in range(extra):
            write_grid(os.path.join(src, "later", f"g{i}.obj"), 20 + 15 * i)
        return src

    def mount(self, name, url, *opts):
        return Mount(self.tree(name), os.path.join(self.base, name, "mnt"),
                     os.path.join(self.base, name, "cache"), "remote=" + url, PATIENT, *opts)

    def read_model(self, mnt, stem):
        out = {}
        for f in sorted(os.listdir(mnt)):
            if f.startswith(stem + ".") and f.rsplit(".", 1)[-1] in ("fmd", "fmi", "gmf", "dem", "vrt",
                                                                        "tri", "sph", "tex"):
                with open(os.path.join(mnt, f), "rb") as fh:
                    out[f] = fh.read()
        self.assertGreater(len(out), 0, stem)
        return out

    def test_server_killed_then_back_owed_sent_without_remount(self):
        n = self.server("ngx-kill")
        url = n.url("studio")
        with self.mount("kill-a", url) as a:
            views = {}
            for stem in ("cone", "tetra", "grid"):
                views.update(self.read_model(a.mnt, stem))
            up = wait_for(a, "uploads before the outage", lambda s: s["remote_queue"] == 0 and
                          s["remote_uploads"] > 0)
            self.assertEqual((up["remote_owed"], up["conversions"]), (0, 3))
            n.stop()
            for stem in ("g0", "g1", "g2"):
                views.update({"later/" + k: v for k, v in
                              self.read_model(os.path.join(a.mnt, "later"), stem).items()})
            st = wait_for(a, "uploads owed in the outage",
                          lambda s: s["remote_queue"] == 0 and s["remote_owed"] > 0)
            self.assertEqual(st["conversions"], 6)
            owed = st["remote_owed"]
            self.assertEqual(len(owed_files(a.cache)), owed)
            # a manifest a model at least, for the three read in the outage
            self.assertGreaterEqual(owed, 3)
            self.assertEqual(st["remote_owed_sent"], 0)
            restart(n)
            st = wait_for(a, "owed list drained", lambda s: s["remote_owed"] == 0, timeout=400)
            log = a.output()
            self.assertEqual(st["remote_owed_sent"], owed, log)
            self.assertEqual(st["remote_owed_dropped"], 0, log)
            self.assertEqual(st["remote_dropped"], 0, log)
            self.assertEqual(owed_files(a.cache), [])
            self.assertEqual(views, read_views(a.mnt))
        p, js = cache_json(a.cache, "stats")
        self.assertEqual((js["remote_owed"], js["remote_owed_sent"], js["remote_owed_dropped"]),
                         (0, owed, 0), p.stdout)
        with self.mount("kill-b", url) as b:
            views_b = read_views(b.mnt)
            st_b = b.stats()
        self.assertEqual(st_b["conversions"], 0, b.output())
        self.assertEqual(views_b, views)

    def test_push_sends_what_a_batch_run_owed(self):
        n = self.server("ngx-push")
        url = n.url("batch")
        n.stop()  # down for the whole run
        src = self.tree("push-a")
        cache = os.path.join(self.base, "push-a", "cache")
        p = run([tool("meshfs-convert"), "-q", "--cache-dir", cache, "--remote", url, *PATIENT_ARGS,
                 "-o", os.path.join(self.base, "push-a", "out"), src], timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        m = re.search(r"remote cache: \S+: (\d+) uploads not sent \(the errors above\); the server "
                      r"lacks those objects\n", p.stderr)
        self.assertIsNotNone(m, p.stderr)
        owed = len(owed_files(cache))
        self.assertEqual(int(m.group(1)), owed, p.stderr)
        self.assertIn(f"remote cache: {url}: {owed} uploads owed in {cache}/owed; "
                      f"`meshfs-cache --cache-dir {cache} push --remote URL` sends them", p.stderr)
        self.assertGreaterEqual(owed, 6)  # a manifest for each of the six models
        _, js = cache_json(cache, "stats")
        self.assertEqual(js["remote_owed"], owed)
        # still down: nothing sent, a line naming each object and why, exit 1
        p = run([tool("meshfs-cache"), "--cache-dir", cache, "push", "--remote", url, *PATIENT_ARGS])
        self.assertEqual(p.returncode, 1, p.stderr)
        lines = re.findall(r"^(view|manifest)/[0-9a-f]{2}/[0-9a-f]{30}: not sent: (.+)$", p.stdout, re.M)
        self.assertEqual(len(lines), owed, p.stdout)
        self.assertEqual(lines[0][1], "Couldn't connect to server", p.stdout)
        self.assertIn(f"push: 0 sent, {owed} not sent (still owed), 0 dropped (no longer in the "
                      f"cache); {owed} owed now\n", p.stdout)
        self.assertEqual(len(owed_files(cache)), owed)
        restart(n)
        p, js = cache_json(cache, "push", "--remote", url, *PATIENT_ARGS)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual((js["sent"], js["not_sent"], js["dropped"], js["owed"]), (owed, 0, 0, 0), js)
        self.assertEqual(len(js["objects"]), owed)
        self.assertTrue(all(o["outcome"] == "sent" for o in js["objects"]), js)
        on_server = objects(n.root, "batch", "view") + objects(n.root, "batch", "manifest")
        self.assertEqual(len(on_server), owed)
        self.assertEqual(sorted(o["object"] for o in js["objects"]),
                         sorted(os.path.relpath(x, os.path.join(n.root, "batch", "v2")) for x in on_server))
        self.assertEqual(owed_files(cache), [])
        _, js = cache_json(cache, "stats")
        self.assertEqual((js["remote_owed"], js["remote_owed_sent"]), (0, owed))
        with self.mount("push-b", url) as b:
            views_b = read_views(b.mnt)
            st = b.stats()
        self.assertEqual(st["conversions"], 0, b.output())
        out = os.path.join(self.base, "push-a", "out")
        written = {}
        for d, dirs, files in os.walk(out):
            for f in files:
                if f.endswith(".lgepkg"):  # the package of the run, no view
                    continue
                with open(os.path.join(d, f), "rb") as fh:
                    written[os.path.relpath(os.path.join(d, f), out)] = fh.read()
        self.assertEqual(sorted(written.keys() - views_b.keys()), [])
        self.assertEqual(sorted(k for k in written if written[k] != views_b[k]), [])
        self.assertGreater(len(written), 6)

    def test_owed_of_evicted_entries_dropped_with_reason(self):
        n = self.server("ngx-gone")
        url = n.url("gone")
        n.stop()
        src = self.tree("gone-a", extra=0)
        cache = os.path.join(self.base, "gone-a", "cache")
        # warm leaves what it could not send owed, as meshfs-convert does
        p = run([tool("meshfs-cache"), "--cache-dir", cache, "warm", "-q", "--remote", url,
                 *PATIENT_ARGS, src], timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        owed = len(owed_files(cache))
        self.assertGreaterEqual(owed, 3)
        self.assertIn(f"meshfs-cache: warm: remote cache: {url}: {owed} uploads not sent (the errors "
                      "above); the server lacks those objects\n", p.stderr)
        self.assertIn(f"meshfs-cache: warm: remote cache: {url}: {owed} uploads owed in {cache}/owed; "
                      f"`meshfs-cache --cache-dir {cache} push --remote URL` sends them\n", p.stderr)
        p = run([tool("meshfs-cache"), "--cache-dir", cache, "clear"])
        self.assertEqual(p.returncode, 0, p.stderr)
        restart(n)
        p = run([tool("meshfs-cache"), "--cache-dir", cache, "push", "--remote", url, *PATIENT_ARGS])
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = re.findall(r"^(?:view|manifest)/[0-9a-f]{2}/[0-9a-f]{30}: dropped: (.+)$", p.stdout, re.M)
        self.assertEqual(lines, ["no longer in the local cache (evicted)"] * owed, p.stdout)
        self.assertEqual(owed_files(cache), [])
        _, js = cache_json(cache, "stats")
        self.assertEqual((js["remote_owed"], js["remote_owed_dropped"]), (0, owed))
        self.assertEqual(objects(n.root, "gone", "manifest"), [])

    def test_owed_bound_drops_said_and_counted(self):
        port = socket.socket()
        port.bind(("127.0.0.1", 0))  # bound, never listening: refused
        self.addCleanup(port.close)
        url = f"http://127.0.0.1:{port.getsockname()[1]}/down"
        counts = {}
        for name, opts in (("bound-all", ()), ("bound-tiny", ("remote_owed_max=8K",))):
            with self.mount(name, url, *opts) as m:
                read_views(m.mnt)
                st = wait_for(m, "uploads settled", lambda s: s["remote_queue"] == 0 and
                              s["remote_owed"] + s["remote_owed_dropped"] > 0)
                time.sleep(0.5)
                counts[name] = (m.stats(), m.output(), m.cache)
        st_all, log_all, _ = counts["bound-all"]
        st, log, cache = counts["bound-tiny"]
        total = st_all["remote_owed"]
        self.assertGreaterEqual(total, 6)
        self.assertEqual(st_all["remote_owed_dropped"], 0, log_all)
        self.assertNotIn("owed list is full", log_all)
        # 8 KiB: two records of 4 KiB; the rest dropped, said once, counted
        self.assertEqual(st["remote_owed"], 2, log)
        self.assertEqual(len(owed_files(cache)), 2)
        self.assertEqual(st["remote_owed_dropped"], total - 2, log)
        self.assertEqual(st["remote_dropped"], total - 2, log)
        self.assertEqual(len(re.findall(
            rf"remote cache: {re.escape(url)}: upload of (?:view|manifest)/[0-9a-f]{{2}}/[0-9a-f]{{30}} "
            r"dropped: the owed list is full \(2 records of 4096 B, remote_owed_max 8192 B\); the "
            r"server lacks it until a machine converts the model again \(remote_owed_dropped counts "
            r"them; logged once\)", log)), 1, log)
        _, js = cache_json(cache, "stats")
        self.assertEqual((js["remote_owed"], js["remote_owed_dropped"]), (2, total - 2))
        # a batch run's bound: --remote-owed-max
        cache = os.path.join(self.base, "bound-batch", "cache")
        p = run([tool("meshfs-convert"), "-q", "--cache-dir", cache, "--remote", url,
                 "--remote-owed-max", "4K", *PATIENT_ARGS, "-o", os.path.join(self.base, "bound-batch", "out"),
                 self.tree("bound-batch")], timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(owed_files(cache)), 1)
        self.assertEqual(p.stderr.count("dropped: the owed list is full (1 records of 4096 B, "
                                        "remote_owed_max 4096 B)"), 1, p.stderr)
        _, js = cache_json(cache, "stats")
        self.assertEqual((js["remote_owed"], js["remote_owed_dropped"]), (1, total - 1))

    def test_bad_option_values_exit_2(self):
        src, mnt = os.path.join(self.base, "opt-src"), os.path.join(self.base, "opt-mnt")
        os.makedirs(src, exist_ok=True)
        os.makedirs(mnt, exist_ok=True)
        for opts, text in [(["remote=http://127.0.0.1:9/x", "remote_owed_max=lots"], "-o remote_owed_max"),
                           (["remote=http://127.0.0.1:9/x", "remote_owed_max=0"], "-o remote_owed_max"),
                           (["remote_owed_max=1M"], "-o remote_*: given without -o remote=URL")]:
            p = run([tool("meshfs"), "-f", "-o", ",".join(["cache_dir=" + self.base + "/opt-cache"] + opts),
                     src, mnt], timeout=30)
            if os.path.ismount(mnt):
                subprocess.run(["fusermount3", "-u", mnt])
            self.assertEqual(p.returncode, 2, (opts, p.stderr))
            self.assertIn(text, p.stderr, opts)
        cache = os.path.join(self.base, "opt-cache")
        p = run([tool("meshfs-cache"), "--cache-dir", cache, "push"])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("push: missing --remote URL", p.stderr)
        p = run([tool("meshfs-cache"), "--cache-dir", cache, "push", "--remote", "gopher://x"])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--remote", p.stderr)
        p = run([tool("meshfs-cache"), "--cache-dir", cache, "push", "--remote", "http://x/y", "extra"])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("push: unexpected argument 'extra'", p.stderr)
        for args in (["meshfs-convert", "-o", os.path.join(self.base, "opt-out")],
                     ["meshfs-cache", "--cache-dir", cache, "warm"]):
            p = run([tool(args[0])] + args[1:] + ["--remote", "http://127.0.0.1:9/x",
                                                  "--remote-owed-max", "lots", src])
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("--remote-owed-max", p.stderr)
            p = run([tool(args[0])] + args[1:] + ["--remote-owed-max", "1M", src])
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("--remote-*: given without --remote URL", p.stderr)

class RemoteSlowerThanConvertingTest(unittest.TestCase):
    """Issue 35 item 7: a server slower than converting is noticed.  Machine
    A converts and uploads through nginx at full speed; machine B reads the
    same objects through a location of the same server throttled with
    limit_rate.  Its first model is fetched (no throughput known yet), and
    measured; the rest would take far longer to fetch than their recorded
    conversion took, so B converts them, says so once and counts them, and
    its views are A's bytes."""

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(NGINX):
            raise unittest.SkipTest("nginx is not installed (scripts/setup installs nginx-light)")
        cls.td = tempdir()
        cls.base = cls.td.name
        cls.nginx = Nginx(os.path.join(cls.base, "nginx"))
        conf = os.path.join(cls.nginx.base, "nginx.conf")
        with open(conf) as f:
            text = f.read()
        text = text.replace("        location / {", f"""        location /throttled/ {{
            alias {cls.nginx.root}/fast/;
            limit_rate 1m;
        }}
        location / {{""", 1)
        with open(conf, "w") as f:
            f.write(text)
        restart(cls.nginx)

    @classmethod
    def tearDownClass(cls):
        cls.nginx.stop()
        cls.td.cleanup()

    def tree(self, name, models):
        """One grid a folder, so reading one model's views makes no other
        folder's listing, and no prefetch, convert or fetch the next."""
        src = os.path.join(self.base, name, "src")
        for i in range(models):
            os.makedirs(os.path.join(src, f"m{i}"))
            write_grid(os.path.join(src, f"m{i}", "grid.obj"), 100 + i)
        return src

    def test_throttled_server_converted_instead(self):
        models = 4
        a = Mount(self.tree("slow-a", models), os.path.join(self.base, "slow-a", "mnt"),
                  os.path.join(self.base, "slow-a", "cache"), "remote=" + self.nginx.url("fast"), PATIENT)
        with a:
            views_a = read_views(a.mnt)
            wait_for(a, "uploads", lambda s: s["remote_queue"] == 0 and s["remote_uploads"] > 0)
        self.assertEqual(len(objects(self.nginx.root, "fast", "manifest")), models)
        url = self.nginx.url("throttled")
        b = Mount(self.tree("slow-b", models), os.path.join(self.base, "slow-b", "mnt"),
                  os.path.join(self.base, "slow-b", "cache"), "remote=" + url, PATIENT,
                  "remote_data_timeout_s=300")
        with b:
            views_b = {}
            for i in range(models):  # one model at a time, in order
                part = read_views(os.path.join(b.mnt, f"m{i}"))
                views_b.update({f"m{i}/" + k: v for k, v in part.items()})
            st = b.stats()
            log = b.output()
        self.assertEqual(views_b, views_a)
        # the first model fetched, whole: its views measured the server
        self.assertGreaterEqual(st["remote_hits"], models)  # every manifest, and m0's views
        self.assertGreater(st["remote_bytes_down"], 1 << 20)
        self.assertIn(st["remote_slow"], (models - 1, models), log)
        self.assertEqual(st["conversions"], st["remote_slow"], log)
        lines = re.findall(rf"remote cache: {re.escape(url)}: slower than converting: m\d/grid.obj: "
                           r"[0-9.]+ MB of views at the measured [0-9.]+ MB/s take about [0-9.]+ s to "
                           r"fetch, its last conversion took [0-9.]+ s; converting such models instead "
                           r"while the server is this slow \(remote_slow counts them; logged once\)", log)
        self.assertEqual(len(lines), 1, log)
        p, js = cache_json(b.cache, "stats")
        self.assertEqual(js["remote_slow"], st["remote_slow"], p.stdout)


if __name__ == "__main__":
    run_tests()
