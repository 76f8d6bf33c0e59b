"""Leases on the remote tier (issue 35 item 4; docs/remote-cache.md,
"Leases"): machines that start together on an empty server convert each
model once in all, through WebDAV LOCK/UNLOCK on a real nginx with
dav_ext (nginx_lock.py) on 127.0.0.1.  A lease whose holder died (the
server's lock timed out) or that outlives a waiter's bound is taken over;
a server without LOCK works as before with one line in the log; a
read-only session never locks; a Lock-Token that is garbage is an error
in the log, never a crash."""
import concurrent.futures
import glob
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import unittest

from common import FORMATS, run, run_tests, tempdir, tool, tree_bytes
from fake_http import Served
from mount import Mount
from nginx_lock import SHORT_S, LockNginx, available
from test_remote import PATIENT, PATIENT_ARGS, objects, write_grid

MODELS = 45


def make_tree(src, n):
    """n small models, each of its own bytes, in three folders."""
    for i in range(n):
        d = os.path.join(src, f"set{i % 3}")
        os.makedirs(d, exist_ok=True)
        write_grid(os.path.join(d, f"m{i:02d}.obj"), 6 + i)


def wait_settled(m, timeout=120):
    """The stats once the upload queue is empty (and the leases with it)."""
    deadline = time.time() + timeout
    while True:
        st = m.stats()
        if st["remote_queue"] == 0:
            return st
        if time.time() > deadline:
            raise AssertionError(f"upload queue did not drain: {st}\n{m.output()}")
        time.sleep(0.1)


def curl(*args):
    p = subprocess.run(["curl", "-sS", "-i", *args], capture_output=True, text=True, timeout=30)
    return p.stdout.replace("\r", "")


class RemoteLeaseTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = available()
        if why:
            raise unittest.SkipTest(why)
        cls.td = tempdir()
        cls.base = cls.td.name
        cls.nginx = LockNginx(os.path.join(cls.base, "nginx"))

    @classmethod
    def tearDownClass(cls):
        cls.nginx.stop()
        cls.td.cleanup()

    def machine(self, name, prefix, n, *opts, env=None):
        """A machine: its own copy of the tree at its own path, its own cache."""
        src = os.path.join(self.base, name, "at", name, "assets")
        if not os.path.exists(src):
            make_tree(src, n)
        return Mount(src, os.path.join(self.base, name, "mnt"), os.path.join(self.base, name, "cache"),
                     "remote=" + self.nginx.url(prefix), PATIENT, *opts, env=env)

    def manifest_keys(self, prefix):
        return [os.path.basename(os.path.dirname(p)) + os.path.basename(p)
                for p in objects(self.nginx.root, prefix, "manifest")]

    def hold_by_hand(self, prefix, key):
        """A lease on key taken with curl and never released."""
        url = self.nginx.url(prefix)
        curl("-X", "PUT", "--data-binary", "x", f"{url}/v2/lease/README")
        out = curl("-X", "LOCK", "-H", "Depth: 0", f"{url}/v2/lease/{key}")
        self.assertRegex(out, r"^HTTP/1.1 20[01]", out)
        self.assertRegex(out, r"\nLock-Token: <urn:[0-9a-f]{8}>\n", out)
        self.assertRegex(curl("-X", "LOCK", "-H", "Depth: 0", f"{url}/v2/lease/{key}"), r"^HTTP/1.1 423")

    def test_crowd_converts_each_model_once(self):
        """Three machines reading the same tree at the same instant (cp -a of
        each mount) on an empty server convert each model once in all,
        within 10%, and copy the same bytes."""
        names = ["crowd-a", "crowd-b", "crowd-c"]
        mounts = [self.machine(n, "lk/crowd", MODELS) for n in names]
        for m in mounts:
            m.__enter__()
        try:
            start = threading.Barrier(len(mounts))

            def copy(i):
                dst = os.path.join(self.base, names[i], "copy")
                start.wait()
                p = subprocess.run(["cp", "-a", mounts[i].mnt, dst], capture_output=True, text=True)
                return p.returncode, p.stderr, dst

            with concurrent.futures.ThreadPoolExecutor(len(mounts)) as ex:
                done = list(ex.map(copy, range(len(mounts))))
            stats = [wait_settled(m) for m in mounts]
            logs = [m.output() for m in mounts]
        finally:
            for m in mounts:
                m.__exit__(None, None, None)
        for rc, err, _ in done:
            self.assertEqual(rc, 0, err)
        trees = [tree_bytes(dst) for _, _, dst in done]
        views = {k for k in trees[0] if k.rsplit(".", 1)[-1] in FORMATS}
        self.assertEqual(len(views), MODELS * len(FORMATS))
        self.assertEqual(trees[1], trees[0])
        self.assertEqual(trees[2], trees[0])
        conv = [st["conversions"] for st in stats]
        detail = f"conversions {conv}, stats {stats}\n" + "\n".join(logs)
        self.assertGreaterEqual(sum(conv), MODELS, detail)
        self.assertLessEqual(sum(conv), int(1.1 * MODELS), detail)
        # each conversion under a lease (one may be taken and found
        # needless), but those whose LOCK found no lease folder on this
        # empty server (409: converted without one, the folder made)
        leases = sum(st["remote_leases"] for st in stats)
        no_folder = [r for r in self.nginx.requests("lk/crowd") if r[0] == "LOCK" and r[2] == 409]
        self.assertGreaterEqual(len(no_folder), 1)
        self.assertGreaterEqual(leases + len(no_folder), sum(conv), detail)
        readme = [r[2] for r in self.nginx.requests("lk/crowd") if r[0] == "PUT" and
                  r[1].endswith("/v2/lease/README")]
        self.assertEqual(set(readme), {201})
        self.assertLessEqual(len(readme), len(mounts))  # once a session at most
        self.assertEqual(sum(st["remote_lock_unsupported"] + st["remote_lease_errors"] for st in stats),
                         0, detail)
        self.assertEqual(len(self.manifest_keys("lk/crowd")), MODELS)
        # every lease was freed: a LOCK on each answers at once
        locks = [r for r in self.nginx.requests("lk/crowd") if r[0] == "LOCK" and r[2] in (200, 201)]
        unlocks = [r for r in self.nginx.requests("lk/crowd") if r[0] == "UNLOCK" and r[2] == 204]
        self.assertEqual(len(locks), leases)
        self.assertEqual(len(unlocks), len(locks))

    def test_batch_crowd_converts_each_model_once(self):
        """meshfs-cache warm goes through the same resolver: three runs
        started together (a CI farm after an asset commit) coordinate too."""
        n = 15
        srcs = []
        for i in range(3):
            src = os.path.join(self.base, f"warm{i}", "assets")
            make_tree(src, n)
            srcs.append(src)

        def warm(i):
            return run([tool("meshfs-cache"), "--cache-dir", os.path.join(self.base, f"warm{i}", "cache"),
                        "--json", "warm", "-q", "--remote", self.nginx.url("lk/warm"), *PATIENT_ARGS,
                        srcs[i]], timeout=600)

        with concurrent.futures.ThreadPoolExecutor(3) as ex:
            res = list(ex.map(warm, range(3)))
        for p in res:
            self.assertEqual(p.returncode, 0, p.stderr)
        conv = [json.loads(p.stdout)["converted"] for p in res]
        self.assertGreaterEqual(sum(conv), n)
        self.assertLessEqual(sum(conv), int(1.1 * n), [p.stderr for p in res])
        self.assertEqual(len(self.manifest_keys("lk/warm")), n)

    def lease_of_first_model(self, prefix, n):
        """The manifest keys of a tree of n models, from a machine on
        another prefix (keys do not depend on the server)."""
        with self.machine(f"probe-{prefix.replace('/', '-')}", "probe-" + prefix.replace("/", "-"), n) as m:
            ref = tree_bytes(m.mnt)
            wait_settled(m)
        keys = self.manifest_keys("probe-" + prefix.replace("/", "-"))
        self.assertEqual(len(keys), n)
        return ref, keys

    def test_lease_of_a_dead_holder_expires_on_the_server(self):
        """A lease taken by hand and never released: the server's lock times
        out (SHORT_S), the waiter takes the lease over and converts."""
        ref, keys = self.lease_of_first_model("lk/dead", 2)
        self.hold_by_hand("lk/dead", keys[0])
        with self.machine("dead-b", "lk/dead", 2) as m:
            got = tree_bytes(m.mnt)
            st = wait_settled(m)
            log = m.output()
        self.assertEqual(got, ref)
        self.assertEqual(st["conversions"], 2, log)
        self.assertEqual(st["remote_lease_waits"], 1, log)
        self.assertEqual(st["remote_lease_takeovers"], 1, log)
        self.assertEqual(st["remote_leases"], 2, log)
        self.assertEqual(len(self.manifest_keys("lk/dead")), 2)
        # the server's lock timeout, read from its LOCK answer, is shorter
        # than a conversion and its upload may take (60 + 2 x 5 s): said once
        self.assertEqual(log.count(f"LOCK: the server's locks last {SHORT_S} s, less than a "
                                   "conversion and its upload may take (70 s"), 1, log)

    def test_lease_outliving_the_bound_is_taken_over(self):
        """The server keeps the lock for an hour: the waiter's bound
        (convert_timeout plus twice remote_data_timeout_s) ends the wait,
        and it converts without a lease, said in the log."""
        ref, keys = self.lease_of_first_model("lklong/bound", 1)
        self.hold_by_hand("lklong/bound", keys[0])
        with self.machine("bound-b", "lklong/bound", 1, "convert_timeout=2",
                          "remote_data_timeout_s=1") as m:
            got = tree_bytes(m.mnt)
            st = wait_settled(m)
            log = m.output()
        self.assertEqual(got, ref)
        self.assertEqual(st["conversions"], 1, log)
        self.assertEqual(st["remote_lease_waits"], 1, log)
        self.assertEqual(st["remote_lease_takeovers"], 1, log)
        self.assertEqual(st["remote_leases"], 0, log)
        self.assertEqual(log.count("a lease held for 4 s without its object; converted here"), 1, log)
        self.assertEqual(len(self.manifest_keys("lklong/bound")), 1)

    def test_killed_holder(self):
        """Machine A takes the lease and is killed (SIGKILL) mid-conversion:
        machine B waits, the lock times out on the server, B converts."""
        n = 1
        env = dict(os.environ, MESHFS_TEST_CONVERT_DELAY_MS="600000")
        # a server used before: the lease folder is there
        curl("-X", "PUT", "--data-binary", "x", self.nginx.url("lk/kill") + "/v2/lease/README")
        a = self.machine("kill-a", "lk/kill", n, env=env)
        a.__enter__()
        try:
            view = glob.glob(os.path.join(a.mnt, "set0", "*.gmf"))[0]
            reader = subprocess.Popen(["cat", view], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 60
            while not any(r[0] == "LOCK" and r[2] in (200, 201) for r in self.nginx.requests("lk/kill")):
                self.assertLess(time.time(), deadline, a.output())
                time.sleep(0.05)
            a.proc.send_signal(signal.SIGKILL)
            a.proc.wait()
            reader.wait(timeout=60)
        finally:
            subprocess.run(["fusermount3", "-uz", a.mnt], capture_output=True)
            a.__exit__(None, None, None)
        self.assertEqual(len(self.manifest_keys("lk/kill")), 0)
        with self.machine("kill-b", "lk/kill", n) as b:
            got = tree_bytes(b.mnt)
            st = wait_settled(b)
            log = b.output()
        self.assertEqual(len([k for k in got if k.endswith(".gmf")]), n)
        self.assertEqual(st["conversions"], n, log)
        self.assertEqual(st["remote_lease_waits"], 1, log)
        self.assertEqual(st["remote_lease_takeovers"], 1, log)
        self.assertEqual(len(self.manifest_keys("lk/kill")), n)

    def test_server_without_lock(self):
        """Plain nginx dav (no dav_ext there): LOCK is 405.  The machine
        converts and uploads as before, says so once; the next converts
        nothing."""
        n = 4
        with self.machine("nolock-a", "nolock", n) as m:
            ref = tree_bytes(m.mnt)
            wait_settled(m)
            # once the 405 is known, no more LOCKs: models added later
            # are converted without asking
            locks = [r for r in self.nginx.requests("nolock") if r[0] == "LOCK"]
            self.assertEqual({r[2] for r in locks}, {405})
            for i in range(3):
                write_grid(os.path.join(m.src, f"late{i}.obj"), 5 + i)
                with open(os.path.join(m.mnt, f"late{i}.gmf"), "rb") as f:
                    self.assertGreater(len(f.read()), 0)
            st = wait_settled(m)
            log = m.output()
        self.assertEqual(st["conversions"], n + 3, log)
        self.assertEqual(st["remote_lock_unsupported"], 1, log)
        self.assertEqual(st["remote_leases"], 0, log)
        url = self.nginx.url("nolock")
        self.assertEqual(log.count(f"remote cache: {url}: LOCK: HTTP 405, the server takes no LOCK "
                                   "(nginx: dav_ext); no leases this session"), 1, log)
        self.assertEqual(len([ln for ln in log.splitlines() if "LOCK" in ln]), 1, log)
        self.assertEqual([r for r in self.nginx.requests("nolock") if r[0] == "LOCK"], locks)
        with self.machine("nolock-b", "nolock", n) as m:
            got = tree_bytes(m.mnt)
            st = m.stats()
        self.assertEqual(got, ref)
        self.assertEqual(st["conversions"], 0)

    def test_read_only_never_locks(self):
        n = 2
        with self.machine("ro", "lk/ro", n, "remote_read_only") as m:
            tree_bytes(m.mnt)
            st = m.stats()
        self.assertEqual(st["conversions"], n)
        self.assertEqual(st["remote_leases"] + st["remote_lease_waits"], 0)
        self.assertEqual([r for r in self.nginx.requests("lk/ro") if r[0] != "GET"], [])


class Liar(Served):
    """An HTTP server whose LOCK answers are hostile: the first path
    component picks one.  /garbage/ a Lock-Token that is no Coded-URL,
    /none/ no Lock-Token, /long/ a Lock-Token of 10,000 bytes, /endless/ a
    body that never ends, /twice/ two Lock-Tokens.  Other methods: PUT
    201, HEAD and GET 404."""

    def __init__(self):
        self.requests = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                outer.requests.append((self.command, self.path))
                n = int(self.headers.get("Content-Length", 0) or 0)
                if n:
                    self.rfile.read(n)
                mode = self.path.split("/")[1]
                if self.command in ("PUT", "UNLOCK"):
                    self.send_response(201 if self.command == "PUT" else 204)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.command != "LOCK":
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                tokens = {"garbage": ["urn:\x01\x7f nonsense"], "none": [],
                          "long": ["<urn:" + "a" * 10000 + ">"],
                          "endless": ["<urn:12345678>"],
                          "twice": ["<urn:12345678>", "<urn:87654321>"]}[mode]
                for t in tokens:
                    self.send_header("Lock-Token", t)
                if mode == "endless":
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    chunk = b"<D:prop>" * 512
                    try:
                        for _ in range(100000):
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    except OSError:
                        pass
                    self.close_connection = True
                    return
                self.send_header("Content-Length", "0")
                self.end_headers()
            do_HEAD = do_PUT = do_LOCK = do_UNLOCK = do_GET

        super().__init__(Handler)


class HostileLeaseTest(unittest.TestCase):
    def test_lock_answers_untrusted(self):
        td = tempdir()
        liar = Liar()
        try:
            for mode, said in [("garbage", "a Lock-Token header that is not a Coded-URL (<...>)"),
                               ("none", "no Lock-Token header"),
                               ("long", "a Lock-Token header that is not a Coded-URL (<...>)"),
                               ("twice", "a Lock-Token header that is not a Coded-URL (<...>)"),
                               ("endless", None)]:
                src = os.path.join(td.name, mode, "src")
                make_tree(src, 2)
                with Mount(src, os.path.join(td.name, mode, "mnt"), os.path.join(td.name, mode, "cache"),
                           "remote=" + liar.url(mode), PATIENT) as m:
                    got = tree_bytes(m.mnt)
                    st = m.stats()
                    log = m.output()
                    self.assertTrue(m.alive())
                self.assertEqual(len([k for k in got if k.endswith(".gmf")]), 2, mode)
                self.assertEqual(st["conversions"], 2, (mode, log))
                self.assertEqual(st["remote_leases"], 0, (mode, log))
                self.assertGreaterEqual(st["remote_lease_errors"], 1, (mode, log))
                if said:
                    self.assertEqual(log.count(f"remote cache: {liar.url(mode)}: LOCK: HTTP 200 with "
                                               f"{said}; converted without a lease (logged once)"), 1,
                                     (mode, log))
                else:
                    self.assertEqual(log.count(f"remote cache: {liar.url(mode)}: LOCK: an answer longer "
                                               "than 65536 bytes; converted without a lease"), 1, log)
        finally:
            liar.stop()
            td.cleanup()


if __name__ == "__main__":
    run_tests()
