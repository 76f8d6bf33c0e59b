"""Coherence bugs found in use (issue 10), each on a real mount, each
asserting on what a user sees: bytes, sizes, errno, exit codes, error text.

B1  a reader sees the old view or the new one, size and bytes matching
B2  failures remember their limits; larger limits, a touch, retry; a worker
    killed from outside is not a model failure
B3  a cache smaller than one model's views still serves them
B4  fsname is SRC, so `mount -a` does not stack mounts
B5  MNT inside SRC is refused
B7/B8  every bad option value: exit 2, option and value named
B10 the cache directory removed while mounted is made again
hide_failed  failed views out of the listing, reasons on the model, rsync 0
"""
import errno
import mmap
import os
import random
import shutil
import signal
import subprocess
import threading
import time
import unittest

from common import BUILD, SOURCE, convert, mount_refused, run, run_tests, tempdir, tool, tsan_run
from mount import Mount

EXAMPLES = os.path.join(SOURCE, "examples", "assets")
FORMATS = ["fmd", "fmi", "gmf", "dem", "vrt", "tri", "sph", "tex"]


def read(path):
    with open(path, "rb") as f:
        return f.read()


def grid_obj(n, z=0.0):
    """An OBJ grid of (n-1)^2 triangles: views grow with n."""
    lines = [f"v {i} {((i * j) % 7) * 0.1 + z} {j}\n" for j in range(n) for i in range(n)]
    lines += [f"f {j * n + i + 1} {(j + 1) * n + i + 1} {j * n + i + 2}\n"
              for j in range(n - 1) for i in range(n - 1)]
    return "".join(lines)


def save(path, text):
    """As editors save: a complete new file renamed over the old one."""
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def worker_pids(daemon_pid, converting=False):
    """meshfs-worker processes converting for the daemon: its children, or
    the children of its fork server (which inherit the server's command
    line), never the server itself.  converting: only those that took a
    job (a spare waits as root, and switches to the model's owner or the
    worker user when its job comes: docs/security.md)."""
    procs = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"meshfs-worker" in cmd:
            procs[int(p)] = (int(fields[1]), b"\0--server\0" in cmd)
    servers = {p for p, (pp, server) in procs.items() if pp == daemon_pid and server}
    pids = [p for p, (pp, server) in procs.items()
            if pp in servers or (pp == daemon_pid and not server)]
    return [p for p in pids if not converting or real_uid(p) not in (0, None)]


def real_uid(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Base(unittest.TestCase):
    def setUp(self):
        self._tmp = tempdir()
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        os.makedirs(self.src)
        self.mnt = os.path.join(self.tmp, "mnt")
        self.cache = os.path.join(self.tmp, "cache")

    def tearDown(self):
        self._tmp.cleanup()

    def mount(self, *opts, env=None, cache=None):
        return Mount(self.src, self.mnt, cache or self.cache, *opts, env=env)

    def expected(self, model_text, name="m.obj", *opts):
        """{format: bytes} meshfs-convert makes of model_text saved as name."""
        d = os.path.join(self.tmp, "exp-%d" % random.randrange(1 << 30))
        os.makedirs(d)
        with open(os.path.join(d, name), "w") as f:
            f.write(model_text)
        out = d + "-out"
        p, _ = convert([os.path.join(d, name)], out, *opts)
        self.assertEqual(p.returncode, 0, p.stderr)
        base = os.path.splitext(name)[0]
        return {f: read(os.path.join(out, base + "." + f)) for f in FORMATS
                if os.path.exists(os.path.join(out, base + "." + f))}


class ReaderSeesOneVersion(Base):
    """B1: about 1 s after a model was saved a reader got the old view's size
    with the new bytes, so its copy was cut short."""

    def test_writer_loop_against_reader_loop(self):
        small, big = grid_obj(3), grid_obj(40)
        exp = {"small": self.expected(small), "big": self.expected(big)}
        for f in ("gmf", "vrt"):
            self.assertNotEqual(len(exp["small"][f]), len(exp["big"][f]))
        model = os.path.join(self.src, "m.obj")
        save(model, small)
        stop = threading.Event()
        saves = [0]

        def writer():
            texts = [big, small]
            while not stop.is_set() and saves[0] < 300:
                save(model, texts[saves[0] % 2])
                saves[0] += 1
                time.sleep(random.uniform(0.0, 0.01))

        seen = {"small": 0, "big": 0}
        with self.mount() as m:
            for f in ("gmf", "vrt"):  # both versions in the cache before the race
                save(model, big)
                read(os.path.join(self.mnt, "m." + f))
                save(model, small)
                read(os.path.join(self.mnt, "m." + f))
            th = threading.Thread(target=writer)
            th.start()
            reads = 0
            try:
                deadline = time.monotonic() + 120
                while th.is_alive() and time.monotonic() < deadline:
                    i = reads
                    reads += 1
                    f = ("gmf", "vrt")[i % 2]
                    view = os.path.join(self.mnt, "m." + f)
                    if i % 3 == 0:
                        os.stat(view)  # the kernel caches these attributes
                    with open(view, "rb") as fh:
                        size = os.fstat(fh.fileno()).st_size
                        data = fh.read()
                    self.assertEqual(len(data), size, f"read {i}: {len(data)} bytes, fstat said {size}")
                    which = [k for k in exp if exp[k][f] == data]
                    self.assertEqual(len(which), 1, f"read {i} of m.{f}: {len(data)} bytes that are "
                                                    f"neither version")
                    seen[which[0]] += 1
            finally:
                stop.set()
                th.join()
            self.assertTrue(m.alive())
        print(f"\nB1: {saves[0]} saves, {reads} reads: small {seen['small']}x, big {seen['big']}x")
        self.assertEqual(saves[0], 300)
        self.assertGreater(seen["small"], 10)
        self.assertGreater(seen["big"], 10)

    def test_readers_holding_old_views_while_the_model_is_saved_over_and_over(self):
        """Four readers open, read and sometimes keep open the model's views
        while it is saved 300 times, 0-5 ms apart, on both read paths.
        Every read is one version whole, its size what fstat says, and a kept
        handle still reads its own bytes when it is read again later.  (Before
        views moved to new inodes, a third of such reads had fstat say the
        other version's size.)  An open that meets two saves and a second
        reader within its own retry is served the version its retry looked
        up, as the kernel does not retry a retry: before nodes.c knew a
        retry by its name, it got ESTALE, 0.3% of opens here and 1.3% under
        ASan.  One that finds the other reader's handle gone as well still
        would: the test allows 0.1%.  Both versions are cached first, so
        no read converts: a lookup whose model was saved over between its
        hash and its check looks again for the file there now (before,
        it converted, and a run that met four saves failed with EIO,
        about one open in 2000 under ASan).  And an open that decides while
        another open's inode invalidation is still on its way sends its
        own (before, about one run in twenty under ThreadSanitizer on a
        loaded machine had fstat say the size the reader's lookup was told,
        not its handle's: docs/coherence.md)."""
        small, big = grid_obj(3), grid_obj(40)
        formats = ("gmf", "vrt", "dem")
        exp = {"small": self.expected(small), "big": self.expected(big)}
        model = os.path.join(self.src, "m.obj")
        for opt in ("passthrough=auto", "passthrough=off"):
            with self.subTest(opt=opt), self.mount(opt) as m:
                for text in (big, small):  # both versions in the cache before the race
                    save(model, text)
                    for f in formats:
                        read(os.path.join(self.mnt, "m." + f))
                converted = m.stats()["conversions"]
                stop = threading.Event()
                bad, errs, opens = [], {}, [0]

                def writer():
                    # 300 saves, and on until the readers have opened 300
                    # times: a slower daemon (ThreadSanitizer's, a loaded
                    # machine) serves fewer opens a save
                    i = 0
                    while i < 300 or (opens[0] <= 300 and i < 3000):
                        save(model, (big, small)[i % 2])
                        time.sleep(random.uniform(0.0, 0.005))
                        i += 1
                    stop.set()

                def reader(seed):
                    rnd = random.Random(seed)
                    kept = []
                    while not stop.is_set():
                        f = rnd.choice(formats)
                        try:
                            fh = open(os.path.join(self.mnt, "m." + f), "rb")
                        except OSError as e:
                            errs[e.errno] = errs.get(e.errno, 0) + 1
                            continue
                        opens[0] += 1
                        size = os.fstat(fh.fileno()).st_size
                        data = fh.read()
                        if len(data) != size or data not in (exp["small"][f], exp["big"][f]):
                            bad.append(f"m.{f}: {len(data)} bytes, fstat {size}")
                        kept.append((fh, data))
                        if rnd.random() < 0.7 or len(kept) > 3:
                            old, was = kept.pop(0)
                            old.seek(0)
                            if old.read() != was:
                                bad.append("a kept handle's bytes changed")
                            old.close()
                    for fh, _ in kept:
                        fh.close()
                ths = [threading.Thread(target=writer)]
                ths += [threading.Thread(target=reader, args=(k,)) for k in range(4)]
                for t in ths:
                    t.start()
                for t in ths:
                    t.join(timeout=300)
                self.assertTrue(m.alive())
                self.assertEqual(bad[:5], [])
                self.assertLessEqual(set(errs), {errno.ESTALE}, errs)
                # the rate is the plain daemon's: under ThreadSanitizer each
                # request runs several times slower, which widens the window
                # it bounds (a retry that meets two saves and the other
                # reader's handle gone); 2 in 761 opens there
                if not tsan_run():
                    self.assertLessEqual(errs.get(errno.ESTALE, 0) * 1000, opens[0], errs)
                self.assertGreater(opens[0], 300)
                self.assertGreater(m.stats()["views_renewed"], 0)
                # both versions were cached: a lookup that met a save looks
                # again, it never converts (nor fails as a run would)
                self.assertEqual(m.stats()["conversions"], converted)
                print(f"\n{opt}: {opens[0]} opens, {errs} errors, "
                      f"{m.stats()['views_renewed']} views renewed")

    def test_size_after_save_without_waiting(self):
        """The old test had to sleep past the kernel's attribute cache; a
        read right after a save must see the new view whole."""
        small, big = grid_obj(3), grid_obj(30)
        exp_small, exp_big = self.expected(small)["gmf"], self.expected(big)["gmf"]
        model = os.path.join(self.src, "m.obj")
        save(model, small)
        with self.mount():
            view = os.path.join(self.mnt, "m.gmf")
            self.assertEqual(os.stat(view).st_size, len(exp_small))
            self.assertEqual(read(view), exp_small)
            for _ in range(3):
                save(model, big)
                self.assertEqual(read(view), exp_big)
                save(model, small)
                self.assertEqual(read(view), exp_small)

    def test_open_old_handle_while_new_version_is_read(self):
        """A handle opened on the old view keeps reading it whole while a
        newer one is opened, read and mapped: both see their own bytes and
        their own size, because the newer view opens as a new file (a new
        inode) beside the old one.  Both read paths: the daemon's, and with
        passthrough the kernel's (it binds one backing file to an inode
        while a handle is open on it)."""
        small, big = grid_obj(3), grid_obj(40)
        exp_small, exp_big = self.expected(small)["vrt"], self.expected(big)["vrt"]
        model = os.path.join(self.src, "m.obj")
        for opt in ("passthrough=off", "passthrough=auto"):
            with self.subTest(opt=opt):
                save(model, big)
                with self.mount(opt) as m:
                    view = os.path.join(self.mnt, "m.vrt")
                    with open(view, "rb") as old:
                        first = old.read(100)
                        old_ino = os.fstat(old.fileno()).st_ino
                        save(model, small)
                        with open(view, "rb") as new:
                            self.assertEqual(os.fstat(new.fileno()).st_size, len(exp_small))
                            self.assertEqual(new.read(), exp_small)
                            with mmap.mmap(new.fileno(), 0, prot=mmap.PROT_READ) as mm:
                                self.assertEqual(mm[:], exp_small)
                        self.assertEqual(os.stat(view).st_size, len(exp_small))
                        rest = old.read()
                        self.assertEqual(first + rest, exp_big)
                        self.assertEqual(os.fstat(old.fileno()).st_size, len(exp_big))
                        self.assertEqual(os.fstat(old.fileno()).st_ino, old_ino)
                        with mmap.mmap(old.fileno(), 0, prot=mmap.PROT_READ) as mm:
                            self.assertEqual(mm[:], exp_big)
                        self.assertEqual(m.stats()["views_renewed"], 1)
                    self.assertEqual(read(view), exp_small)
                    self.assertEqual(os.stat(view).st_size, len(exp_small))
                    self.assertEqual(m.stats()["views_renewed"], 1)


    def test_a_lookup_after_a_save_shows_the_new_view_beside_an_open_old_one(self):
        """A path looked up after its model was saved shows the new view
        (size and bytes) even while a handle on the old one is open: the
        name moves to a new inode at the lookup, not only at an open.
        entry_timeout=0 makes every path walk a LOOKUP."""
        small, big = grid_obj(3), grid_obj(40)
        exp_small, exp_big = self.expected(small)["vrt"], self.expected(big)["vrt"]
        model = os.path.join(self.src, "m.obj")
        save(model, big)
        with self.mount("entry_timeout=0", "attr_timeout=0") as m:
            view = os.path.join(self.mnt, "m.vrt")
            with open(view, "rb") as old:
                first = old.read(100)
                t = os.stat(model).st_mtime_ns
                save(model, small)
                os.utime(model, ns=(t, t + 10**6))  # later, even within a clock tick
                self.assertEqual(os.stat(view).st_size, len(exp_small))
                self.assertEqual(m.stats()["views_renewed"], 1)  # at the lookup
                self.assertEqual(os.fstat(old.fileno()).st_size, len(exp_big))
                self.assertEqual(first + old.read(), exp_big)
                self.assertEqual(read(view), exp_small)
                self.assertEqual(m.stats()["views_renewed"], 1)  # the open needed none
            self.assertEqual(os.stat(view).st_size, len(exp_small))


    def test_a_reopen_through_proc_of_an_old_handle_reads_its_view(self):
        """A reopen that goes to the file, not through its name
        (/proc/self/fd/N, as `tool /dev/stdin < view` does), after its model
        was saved: the old view's bytes and size, on both read paths, whether
        a lookup moved the name first or the reopen is the first to meet the
        new entry.  Its first OPEN is answered ESTALE (a path walk would find
        the new view on its retry); the retry comes back to the same inode
        from the same thread and is served."""
        small, big = grid_obj(3), grid_obj(40)
        exp_small, exp_big = self.expected(small)["vrt"], self.expected(big)["vrt"]
        model = os.path.join(self.src, "m.obj")
        for opt in ("passthrough=auto", "passthrough=off"):
            for lookup_first in (True, False):
                with self.subTest(opt=opt, lookup_first=lookup_first):
                    save(model, big)
                    with self.mount(opt, "entry_timeout=0") as m:
                        view = os.path.join(self.mnt, "m.vrt")
                        with open(view, "rb") as old:
                            t = os.stat(model).st_mtime_ns
                            save(model, small)
                            os.utime(model, ns=(t, t + 10**6))
                            if lookup_first:
                                self.assertEqual(os.stat(view).st_size, len(exp_small))
                                self.assertEqual(m.stats()["views_renewed"], 1)
                            for _ in range(2):
                                with open(f"/proc/self/fd/{old.fileno()}", "rb") as again:
                                    self.assertEqual(os.fstat(again.fileno()).st_size, len(exp_big))
                                    self.assertEqual(again.read(), exp_big)
                            self.assertEqual(m.stats()["views_renewed"], 1)
                            self.assertEqual(read(view), exp_small)
                            self.assertEqual(old.read(), exp_big)
                        self.assertEqual(read(view), exp_small)

    def test_a_listing_after_a_save_shows_the_new_view_beside_an_open_old_one(self):
        """The same through a listing: its readdirplus entry gives the name
        a new inode with the new view's size, and the stat that follows
        takes it from the kernel without a lookup."""
        small, big = grid_obj(3), grid_obj(40)
        exp_small, exp_big = self.expected(small)["vrt"], self.expected(big)["vrt"]
        model = os.path.join(self.src, "m.obj")
        with self.mount("entry_timeout=30", "attr_timeout=30") as m:
            view = os.path.join(self.mnt, "m.vrt")
            save(model, small)  # converted, so the listing knows its size
            self.assertEqual(read(view), exp_small)
            save(model, big)
            with open(view, "rb") as old:
                self.assertEqual(os.fstat(old.fileno()).st_size, len(exp_big))
                t = os.stat(model).st_mtime_ns
                save(model, small)
                os.utime(model, ns=(t, t + 10**6))  # later, even within a clock tick
                os.stat(os.path.join(self.mnt, "m.gmf"))  # hashes the model: the listing knows it
                self.assertEqual(m.stats()["views_renewed"], 0)
                os.listdir(self.mnt)
                self.assertEqual(m.stats()["views_renewed"], 1)  # at the listing
                self.assertEqual(os.stat(view).st_size, len(exp_small))
                self.assertEqual(read(view), exp_small)
                self.assertEqual(old.read(), exp_big)
                self.assertEqual(os.fstat(old.fileno()).st_size, len(exp_big))
                self.assertEqual(m.stats()["views_renewed"], 1)


    def test_an_open_that_the_name_moved_under_opens_the_new_view(self):
        """An open that reached the old inode (its name cached by the kernel)
        while a listing moved the name to a new one: it must not serve the
        new entry on the old inode, whose size is the old handle's; it says
        ESTALE and the kernel's retry opens the new inode.  Every open waits
        400 ms before it decides (a test-build hook), so the listing moves
        the name during the open, every run; the daemon serves reads
        (passthrough=off), where a wrong inode would show as a wrong size."""
        small, big = grid_obj(3), grid_obj(40)
        exp_small, exp_big = self.expected(small)["vrt"], self.expected(big)["vrt"]
        model = os.path.join(self.src, "m.obj")
        env = dict(os.environ, MESHFS_TEST_OPEN_DELAY_MS="400")
        with self.mount("passthrough=off", "entry_timeout=30", "attr_timeout=0", env=env) as m:
            view = os.path.join(self.mnt, "m.vrt")
            save(model, small)  # converted, so the listing knows its size
            self.assertEqual(read(view), exp_small)
            save(model, big)
            with open(view, "rb") as old:
                t = os.stat(model).st_mtime_ns
                save(model, small)
                os.utime(model, ns=(t, t + 10**6))
                os.stat(os.path.join(self.mnt, "m.gmf"))  # hashes the model: the listing knows it
                got = {}

                def reader():
                    with open(view, "rb") as f:
                        got["size"] = os.fstat(f.fileno()).st_size
                        got["data"] = f.read()
                th = threading.Thread(target=reader)
                th.start()
                time.sleep(0.15)  # the open is waiting in the daemon
                os.listdir(self.mnt)
                self.assertEqual(m.stats()["views_renewed"], 1)
                th.join()
                self.assertEqual(got["data"], exp_small)
                self.assertEqual(got["size"], len(exp_small))
                self.assertEqual(old.read(), exp_big)
                self.assertEqual(os.fstat(old.fileno()).st_size, len(exp_big))
            self.assertEqual(m.stats()["views_renewed"], 1)


class FailuresRememberTheirLimits(Base):
    """B2: timeouts and memory-limit failures were cached forever, and
    survived a remount with larger limits; a touch did not retry either."""

    def setUp(self):
        super().setUp()
        shutil.copytree(os.path.join(EXAMPLES, "crate"), os.path.join(self.src, "crate"))
        self.view = os.path.join(self.mnt, "crate", "crate.gmf")
        out = os.path.join(self.tmp, "out")
        p, _ = convert([os.path.join(self.src, "crate", "crate.obj")], out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.good = read(os.path.join(out, "crate.gmf"))
        # the worker's test hook: sleep before importing (meshfs-worker.c)
        self.slow = dict(os.environ, MESHFS_TEST_WORKER_SLEEP="1")

    def eio(self, path):
        with self.assertRaises(OSError) as cm:
            read(path)
        self.assertEqual(cm.exception.errno, errno.EIO)
        return os.getxattr(path, "user.meshfs.error").decode()

    def test_larger_timeout_retries(self):
        with self.mount("convert_timeout=0.5", env=self.slow) as m:
            self.assertIn("timed out after 0.5 s", self.eio(self.view))
            self.assertEqual(m.stats()["conversions"], 1)
        # the same limit: the failure stands, nothing is converted
        with self.mount("convert_timeout=0.5", env=self.slow) as m:
            self.assertIn("timed out after 0.5 s", self.eio(self.view))
            self.assertEqual(m.stats()["conversions"], 0)
        # a smaller one: it stands too
        with self.mount("convert_timeout=0.25", env=self.slow) as m:
            self.assertIn("timed out after 0.5 s", self.eio(self.view))
            self.assertEqual(m.stats()["conversions"], 0)
        # a larger one: tried again, and it converts
        with self.mount("convert_timeout=20", env=self.slow) as m:
            self.assertEqual(read(self.view), self.good)
            self.assertEqual(m.stats()["conversions"], 1)
        # and the success is what later mounts see, whatever their limit
        with self.mount("convert_timeout=0.5", env=self.slow) as m:
            self.assertEqual(read(self.view), self.good)
            self.assertEqual(m.stats()["conversions"], 0)

    def test_larger_memory_retries(self):
        # the failure's limits are all recorded: memory like the timeout
        with self.mount("convert_timeout=0.5", "convert_memory=1G", env=self.slow) as m:
            self.eio(self.view)
        with self.mount("convert_timeout=0.5", "convert_memory=1G", env=self.slow) as m:
            self.eio(self.view)
            self.assertEqual(m.stats()["conversions"], 0)
        with self.mount("convert_timeout=0.5", "convert_memory=2G", env=self.slow) as m:
            self.eio(self.view)
            self.assertEqual(m.stats()["conversions"], 1)  # tried again, failed again

    def test_touch_retries(self):
        model = os.path.join(self.src, "crate", "crate.obj")
        with self.mount("convert_timeout=0.5", env=self.slow) as m:
            self.eio(self.view)
            self.eio(os.path.join(self.mnt, "crate", "crate.fmd"))
            self.assertEqual(m.stats()["conversions"], 1)  # remembered
            t = time.time() + 5
            os.utime(model, (t, t))  # touch: same bytes, new mtime
            self.assertIn("timed out", self.eio(self.view))
            self.assertEqual(m.stats()["conversions"], 2)  # tried again
            self.eio(self.view)
            self.assertEqual(m.stats()["conversions"], 2)  # and remembered again

    def test_worker_killed_from_outside_is_not_the_models_failure(self):
        env = dict(os.environ, MESHFS_TEST_WORKER_SLEEP="3")
        with self.mount("convert_timeout=30", env=env) as m:
            got = {}

            def reader():
                try:
                    got["data"] = read(self.view)
                except OSError as e:
                    got["errno"] = e.errno

            th = threading.Thread(target=reader)
            th.start()
            deadline = time.time() + 10
            pids = []
            while not pids and time.time() < deadline:
                # the one converting, not a spare: a spare killed too could
                # be the one the retry takes, and fail it as well
                pids = worker_pids(m.proc.pid, converting=True)
                time.sleep(0.05)
            self.assertTrue(pids, "no worker appeared")
            for p in pids:
                os.kill(p, signal.SIGTERM)
            th.join(30)
            self.assertIn("killed by SIGTERM from outside", m.output())
            # not remembered as the model's failure: the open that follows the
            # failed lookup converts again (were it remembered: EIO), and the
            # reader gets the view
            self.assertEqual(got.get("data"), self.good, got.get("errno"))
            self.assertEqual(m.stats()["conversions"], 2)
            self.assertEqual(read(self.view), self.good)
            self.assertEqual(m.stats()["conversions"], 2)


class TinyCache(Base):
    """B3: a cache smaller than one model's views made them fail with EIO
    "inputs kept changing"."""

    def test_views_larger_than_the_cache_are_served(self):
        text = grid_obj(60)
        with open(os.path.join(self.src, "big.obj"), "w") as f:
            f.write(text)
        exp = self.expected(text, "big.obj")
        self.assertGreater(sum(map(len, exp.values())), 64 * 1024)
        with self.mount("cache_size=16K") as m:
            for _ in range(2):
                for f in FORMATS:
                    v = os.path.join(self.mnt, "big." + f)
                    data = read(v)
                    self.assertEqual(data, exp[f], f)
                    self.assertEqual(os.stat(v).st_size, len(exp[f]), f)
            self.assertIn("cache too small", m.output())
            self.assertIn("raise -o cache_size", m.output())
            self.assertGreater(m.stats()["views_evicted_at_store"], 0)  # counted (issue 36)
            self.assertTrue(m.alive())


class MountA(Base):
    """B4: `mount -a` stacked a mount per run: every meshfs mount was called
    "meshfs", so mount(8) never found the fstab line's source mounted.

    mount(8) runs helpers without PATH, so mount.fuse3 finds `meshfs` only
    in the default search path: the test runs in a private mount namespace
    with the build's meshfs bound over /usr/local/sbin there, touching
    nothing outside."""

    SCRIPT = r"""
mount --bind "$BIN" /usr/local/sbin
mount -T "$FSTAB" -a
mount -T "$FSTAB" -a
grep -F " $MNT " /proc/self/mountinfo > "$OUT/mountinfo" || true
findmnt -n -r -o SOURCE,FSTYPE --mountpoint "$MNT" > "$OUT/findmnt" || true
cmp "$MNT/crate.obj" "$SRC/crate.obj" && echo same > "$OUT/cmp"
n=0
while grep -qF " $MNT " /proc/self/mountinfo && [ $n -lt 5 ]; do umount "$MNT"; n=$((n+1)); done
echo $n > "$OUT/umounts"
"""

    def test_mount_a_twice_mounts_once(self):
        if os.geteuid() != 0 or not shutil.which("mount.fuse3") or not shutil.which("unshare"):
            self.skipTest("needs root, mount.fuse3 and unshare")
        src = os.path.join(self.tmp, "my models, v2")  # a space and a comma
        shutil.copytree(os.path.join(EXAMPLES, "crate"), src)
        mnt = os.path.join(self.tmp, "mnt")
        os.makedirs(mnt)
        fstab = os.path.join(self.tmp, "fstab")
        with open(fstab, "w") as f:
            f.write(f"{src.replace(' ', chr(92) + '040')} {mnt} fuse.meshfs ro,cache_dir={self.cache} 0 0\n")
        bin_dir, out = os.path.join(self.tmp, "bin"), os.path.join(self.tmp, "out")
        os.makedirs(bin_dir)
        os.makedirs(out)
        os.symlink(tool("meshfs"), os.path.join(bin_dir, "meshfs"))
        env = dict(os.environ, BIN=bin_dir, FSTAB=fstab, MNT=mnt, SRC=src, OUT=out)
        p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-ec", self.SCRIPT],
                           env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [l.split(" - ")[1].split() for l in read(os.path.join(out, "mountinfo")).decode().splitlines()]
        self.assertEqual(len(rows), 1, rows)  # mounted once, not stacked
        fstype, source = rows[0][0], rows[0][1]
        self.assertEqual(fstype, "fuse.meshfs")
        self.assertEqual(source.replace("\\040", " "), src)
        source, fstype = read(os.path.join(out, "findmnt")).decode().split()
        self.assertEqual((source.replace("\\x20", " "), fstype), (src, "fuse.meshfs"))
        self.assertEqual(read(os.path.join(out, "cmp")), b"same\n")
        self.assertEqual(read(os.path.join(out, "umounts")), b"1\n")


class FsnameEscaped(Base):
    """B4: SRC becomes the fsname, escaped: a comma in its name adds no
    mount option (unescaped, "x,suid,dev" would turn suid and dev back on)."""

    def test_comma_in_src_adds_no_option(self):
        src = os.path.join(self.tmp, "x,suid,dev")
        shutil.copytree(os.path.join(EXAMPLES, "crate"), src)
        with Mount(src, self.mnt, self.cache) as m:
            with open("/proc/self/mountinfo") as f:
                rows = [l for l in f if l.split()[4] == self.mnt]
            self.assertEqual(len(rows), 1)
            opts, (fstype, source, superopts) = rows[0].split()[5], rows[0].split(" - ")[1].split()
            self.assertEqual((fstype, source), ("fuse.meshfs", src))
            self.assertIn("nosuid", opts.split(","))
            self.assertIn("nodev", opts.split(","))
            self.assertTrue(m.alive())


class MountPointInsideSource(Base):
    """B5: MNT inside SRC hung the daemon on its own mount."""

    def refused(self, src, mnt):
        os.makedirs(mnt, exist_ok=True)
        p = subprocess.run([tool("meshfs"), "-f", "-o", "cache_dir=" + self.cache, src, mnt],
                           capture_output=True, text=True, timeout=30)
        self.assertFalse(os.path.ismount(mnt))
        self.assertEqual(p.returncode, 2, p.stderr)
        return p.stderr

    def test_refused(self):
        sub = os.path.join(self.src, "mnt")
        err = self.refused(self.src, sub)
        self.assertIn(f"mount point {sub} is inside the source folder {self.src}", err)
        self.assertIn("hang", err)
        # deeper, and through a symbolic link
        deep = os.path.join(self.src, "a", "b")
        self.assertIn("is inside the source folder", self.refused(self.src, deep))
        link = os.path.join(self.tmp, "link")
        os.symlink(deep, link)
        self.assertIn("is inside the source folder", self.refused(self.src, link))
        # SRC itself
        self.assertIn("is the same folder as the source folder", self.refused(self.src, self.src))
        # SRC inside MNT
        self.assertIn(f"source folder {self.src} is inside the mount point", self.refused(self.src, self.tmp))

    def test_file_mount_point_refused(self):
        # over a regular file the mount came up, status 0, as a file whose
        # every access was EIO
        mnt = os.path.join(self.tmp, "afile")
        with open(mnt, "w") as f:
            f.write("x")
        p = mount_refused(self.src, mnt, "cache_dir=" + self.cache)
        self.assertFalse(os.path.ismount(mnt))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(f"mount point {mnt}: not a folder", p.stderr)
        with open(mnt) as f:
            self.assertEqual(f.read(), "x")

    def test_file_source_is_a_usage_error(self):
        # it failed later, as the daemon ("error: ...: Not a directory", status 1)
        model = os.path.join(self.src, "m.obj")
        with open(model, "w") as f:
            f.write(grid_obj(2))
        os.makedirs(self.mnt)
        p = mount_refused(model, self.mnt, "cache_dir=" + self.cache)
        self.assertFalse(os.path.ismount(self.mnt))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(f"source folder {model}: not a folder", p.stderr)


MOUNT_BAD = [
    ("cache_dir=", "empty"),
    ("cache_size=inf", "not a size"),
    ("cache_size=nan", "not a size"),
    ("cache_size=-1", "not a size"),
    ("cache_size=12abc", "not a size"),
    ("cache_size= 5M", "not a size"),
    ("cache_size=0x10", "not a size"),
    ("cache_size=1e3", "not a size"),
    ("cache_size=99999999999T", "too large"),
    ("cache_size=0", "too small"),
    ("convert_timeout=-1", "not a number of seconds"),
    ("convert_timeout=nan", "not a number of seconds"),
    ("convert_timeout=inf", "not a number of seconds"),
    ("convert_timeout=abc", "not a number of seconds"),
    ("convert_timeout=0", "more than 0"),
    ("convert_timeout=99999999", "too long"),
    ("convert_memory=abc", "not a size"),
    ("convert_memory=-1G", "not a size"),
    ("convert_memory=inf", "not a size"),
    ("convert_memory=1K", "too small"),
    ("convert_jobs=0", "at least 1"),
    ("convert_jobs=-5", "not a whole number"),
    ("convert_jobs=1.5", "not a whole number"),
    ("convert_jobs=4294967291", "at most 64"),
    ("convert_jobs=100000000000000000000", "at most 64"),
    ("vrt_layout=fancy", "expected 'skinned'"),
    ("lgepkg_name=", "1 to 19 bytes"),
    ("lgepkg_name=" + "n" * 20, "1 to 19 bytes"),
    ("lgepkg_version=" + "v" * 20, "at most 19 bytes"),
    ("formats=fmd:nope", "unknown format 'nope'"),
    ("formats=", "no format selected"),
]

CONVERT_BAD = [
    (["-j", "0"], "--jobs=0", "at least 1"),
    (["-j", "-5"], "--jobs=-5", "not a whole number"),
    (["-j", "100000"], "--jobs=100000", "at most 64"),
    (["-j", "abc"], "--jobs=abc", "not a whole number"),
    (["--timeout", "-1"], "--timeout=-1", "not a number of seconds"),
    (["--timeout", "nan"], "--timeout=nan", "not a number of seconds"),
    (["--timeout", "inf"], "--timeout=inf", "not a number of seconds"),
    (["--timeout", "0"], "--timeout=0", "more than 0"),
    (["--memory", "abc"], "--memory=abc", "not a size"),
    (["--memory", "inf"], "--memory=inf", "not a size"),
    (["--memory", "-1"], "--memory=-1", "not a size"),
    (["--memory", "1K"], "--memory=1K", "too small"),
    (["--memory", "99999999999T"], "--memory=99999999999T", "too large"),
    (["-f", "fmd,nope"], "--formats=fmd,nope", "unknown format 'nope'"),
    (["--vrt-layout", "fancy"], "fancy", "expected 'skinned'"),
    (["--lgepkg-name", ""], "--lgepkg-name ''", "1 to 19 bytes"),
]


class OptionValues(Base):
    """B7/B8: option values were taken without checks (convert_jobs=-5 ran
    4294967291 jobs, cache_size=inf was undefined behaviour, cache_dir= used
    the working folder).  Each bad value: exit 2, option and value named."""

    def test_mount_rejects_bad_values(self):
        os.makedirs(self.mnt)
        for opt, why in MOUNT_BAD:
            with self.subTest(opt=opt):
                o = opt if opt.startswith("cache_dir=") else "cache_dir=" + self.cache + "," + opt
                p = mount_refused(self.src, self.mnt, o)
                self.assertEqual(p.returncode, 2, f"{opt}: {p.stderr}")
                self.assertIn(opt, p.stderr)
                self.assertIn(why, p.stderr)
        self.assertFalse(os.path.exists(os.path.join(os.getcwd(), "v2")))

    def test_convert_rejects_bad_values(self):
        model = os.path.join(self.src, "m.obj")
        with open(model, "w") as f:
            f.write(grid_obj(3))
        out = os.path.join(self.tmp, "out")
        for args, named, why in CONVERT_BAD:
            with self.subTest(args=args):
                p = run([tool("meshfs-convert"), "-o", out] + args + [model])
                self.assertEqual(p.returncode, 2, f"{args}: {p.stderr}")
                self.assertIn(named, p.stderr)
                self.assertIn(why, p.stderr)
        self.assertFalse(os.path.exists(out))

    def test_good_values_still_work(self):
        with open(os.path.join(self.src, "m.obj"), "w") as f:
            f.write(grid_obj(3))
        with self.mount("cache_size=1.5G", "convert_timeout=2.5", "convert_memory=512MiB",
                        "convert_jobs=64") as m:
            self.assertTrue(read(os.path.join(self.mnt, "m.gmf")))
            self.assertTrue(m.alive())

    def test_both_separators_in_both_tools(self):
        with open(os.path.join(self.src, "m.obj"), "w") as f:
            f.write(grid_obj(3))
        for sep in (":", "+"):
            with self.subTest(mount=sep), self.mount("formats=fmd" + sep + "gmf"):
                self.assertEqual(sorted(os.listdir(self.mnt)), ["m.fmd", "m.gmf", "m.obj"])
        for sep in (",", ":", "+"):
            with self.subTest(convert=sep):
                out = os.path.join(self.tmp, "out" + str(ord(sep)))
                p = run([tool("meshfs-convert"), "-q", "--no-cache", "-o", out, "-f", "fmd" + sep + "gmf",
                         os.path.join(self.src, "m.obj")])
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(sorted(os.listdir(out)), ["m.fmd", "m.gmf"])


class CacheRemovedWhileMounted(Base):
    """B10: `rm -rf` of the cache directory broke every view until remount."""

    def test_rm_rf_cache(self):
        shutil.copytree(EXAMPLES, self.src, dirs_exist_ok=True)
        out = os.path.join(self.tmp, "out")
        p, _ = convert([self.src], out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with self.mount() as m:
            self.assertEqual(read(os.path.join(self.mnt, "crate", "crate.gmf")),
                             read(os.path.join(out, "crate", "crate.gmf")))
            shutil.rmtree(self.cache)
            # a cold model: converted and stored again
            self.assertEqual(read(os.path.join(self.mnt, "props", "cone.fmd")),
                             read(os.path.join(out, "props", "cone.fmd")))
            for name in ("CACHEDIR.TAG", "tmp", "v2", "index", "lock"):
                self.assertTrue(os.path.exists(os.path.join(self.cache, name)), name)
            self.assertEqual(os.stat(self.cache).st_mode & 0o777, 0o700)
            # stored again: cone's model entry (its small views inside)
            entries = [f for _, _, fs in os.walk(os.path.join(self.cache, "v2")) for f in fs]
            self.assertTrue(any(f.endswith(".m") for f in entries), entries)
            # the model read before: its entries went, so converted again
            self.assertEqual(read(os.path.join(self.mnt, "crate", "crate.fmd")),
                             read(os.path.join(out, "crate", "crate.fmd")))
            self.assertEqual(read(os.path.join(self.mnt, "crate", "crate.gmf")),
                             read(os.path.join(out, "crate", "crate.gmf")))
            self.assertIn("cache directory was removed while mounted", m.output())
            # and again, twice in one mount
            shutil.rmtree(self.cache)
            self.assertEqual(read(os.path.join(self.mnt, "scene", "street.gmf")),
                             read(os.path.join(out, "scene", "street.gmf")))
            self.assertTrue(os.path.isdir(os.path.join(self.cache, "v2")))
            # everything in it, the directory left (rm -rf cache/*)
            for name in os.listdir(self.cache):
                p = os.path.join(self.cache, name)
                shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)
            self.assertEqual(read(os.path.join(self.mnt, "characters", "strip.gmf")),
                             read(os.path.join(out, "characters", "strip.gmf")))
            for name in ("CACHEDIR.TAG", "tmp", "v2", "index", "lock"):
                self.assertTrue(os.path.exists(os.path.join(self.cache, name)), name)
            self.assertTrue(m.alive())
        # the next mount finds what was stored after the last removal
        with self.mount() as m:
            read(os.path.join(self.mnt, "characters", "strip.fmd"))
            self.assertEqual(m.stats()["conversions"], 0)


class HideFailed(Base):
    """Failed views showed as 0-byte files, so `rsync -a MNT/ dst/` always
    exited 23.  -o hide_failed leaves them out; the reasons stay readable on
    the model file."""

    def setUp(self):
        super().setUp()
        shutil.copytree(os.path.join(EXAMPLES, "crate"), os.path.join(self.src, "crate"))
        with open(os.path.join(self.src, "crate", "broken.obj"), "w") as f:
            f.write("v 0 0 0\nf 1 2 3\n")  # face index out of range

    def test_without_hide_failed_rsync_fails(self):
        with self.mount():
            os.stat(os.path.join(self.mnt, "crate", "broken.fmd"))
            self.assertEqual(os.stat(os.path.join(self.mnt, "crate", "broken.fmd")).st_size, 0)
            p = run(["rsync", "-a", self.mnt + "/", os.path.join(self.tmp, "dst") + "/"])
            self.assertEqual(p.returncode, 23, p.stderr)

    def test_hide_failed(self):
        with self.mount("hide_failed") as m:
            crate = os.path.join(self.mnt, "crate")
            # first sight: the stat converts, the failure is known, not there
            with self.assertRaises(FileNotFoundError):
                os.stat(os.path.join(crate, "broken.fmd"))
            names = os.listdir(crate)
            for f in FORMATS:
                self.assertNotIn("broken." + f, names)
                self.assertIn("crate." + f, names)
            self.assertIn("broken.obj", names)  # the model itself is shown
            for f in FORMATS:
                with self.assertRaises(OSError) as cm:
                    open(os.path.join(crate, "broken." + f), "rb")
                self.assertEqual(cm.exception.errno, errno.ENOENT)
            # the reasons: on the model, one line per failed view
            why = os.getxattr(os.path.join(crate, "broken.obj"), "user.meshfs.error").decode()
            lines = why.splitlines()
            self.assertEqual(sorted(l.split(":")[0] for l in lines), sorted("broken." + f for f in FORMATS))
            for l in lines:
                self.assertIn("import failed", l)
            self.assertNotIn(self.src, why)
            # a good model has none
            with self.assertRaises(OSError) as cm:
                os.getxattr(os.path.join(crate, "crate.obj"), "user.meshfs.error")
            self.assertEqual(cm.exception.errno, errno.ENODATA)
            # mirroring works
            dst = os.path.join(self.tmp, "dst")
            p = run(["rsync", "-a", self.mnt + "/", dst + "/"])
            self.assertEqual(p.returncode, 0, p.stderr)
            got = sorted(os.listdir(os.path.join(dst, "crate")))
            self.assertEqual(got, sorted(["broken.obj", "crate.mtl", "crate.obj", "textures",
                                          "game_resources.lgepkg"] + ["crate." + f for f in FORMATS]))
            self.assertEqual(read(os.path.join(dst, "crate", "crate.gmf")), read(os.path.join(crate, "crate.gmf")))
            self.assertTrue(m.alive())
        # a fixed model shows its views again
        shutil.copy(os.path.join(self.src, "crate", "crate.obj"), os.path.join(self.src, "crate", "broken.obj"))
        with self.mount("hide_failed"):
            self.assertTrue(read(os.path.join(self.mnt, "crate", "broken.gmf")))
            self.assertIn("broken.gmf", os.listdir(os.path.join(self.mnt, "crate")))

    def test_mirror_as_documented(self):
        """README: mount with hide_failed, `ls -lR` once, then rsync exits 0."""
        with self.mount("hide_failed"):
            p = run(["ls", "-lR", self.mnt])
            self.assertEqual(p.returncode, 1)  # it met the failed views going away
            self.assertIn("broken.gmf", p.stderr)
            dst = os.path.join(self.tmp, "dst")
            p = run(["rsync", "-a", self.mnt + "/", dst + "/"])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertFalse([f for f in os.listdir(os.path.join(dst, "crate")) if f.startswith("broken.")
                              and f != "broken.obj"])

    def test_model_error_without_hide_failed(self):
        with self.mount():
            why = os.getxattr(os.path.join(self.mnt, "crate", "broken.obj"), "user.meshfs.error").decode()
            self.assertIn("broken.gmf: import failed", why)
            # read by name only: listxattr does not offer it (cp -a, rsync -X)
            self.assertNotIn("user.meshfs.error", os.listxattr(os.path.join(self.mnt, "crate", "broken.obj")))


if __name__ == "__main__":
    run_tests()
