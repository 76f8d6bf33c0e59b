"""Issue 11 section 4: listings never stall, and the sizes a listing needs
are computed convert_jobs at a time.

never waits   a conversion held open by the daemon's test hook
              (MESHFS_TEST_CONVERT_HOLD, -Dtest_hooks=true) while the same
              folder is read (readdir, ls, find -ls, stats of the other
              names): every listing returns while the conversion is still
              held (conversions_running == 1, its reader not back yet).
              Ordering, not time: the hold lasts until the test releases it.
prefetch      `ls -l` of a folder of cold models, each conversion slowed
              (MESHFS_TEST_WORKER_SLEEP), with convert_jobs=2: two
              conversions run at once (conversions_peak == 2), every model
              converts once, every size is meshfs-convert's; with
              -o prefetch=0, one at a time; a bad model does not stop the
              others; unmount with models queued exits 0 at once, leaving no
              worker and no job directory; the log shows the fill's progress.
option        -o prefetch=N: a bad value stops the mount with status 2,
              naming the option.

Every mount shows no .lgepkg: a package's stat converts all of its folder's
models itself (lgepkg.c), which would hide what is measured here.
"""
import os
import re
import shutil
import subprocess
import threading
import time
import unittest

from common import FORMATS, SOURCE, TreeCase, convert, run_tests, settle, tmp_leftovers, tool
from mount import Mount

EXAMPLES = os.path.join(SOURCE, "examples", "assets")
VIEWS = ":".join(FORMATS)  # every per-model view, no package


def fuse_version():
    p = subprocess.run([tool("meshfs"), "--version"], capture_output=True, text=True)
    m = re.search(r"FUSE library version (\d+)\.(\d+)", p.stdout + p.stderr)
    if not m:
        raise AssertionError("meshfs --version names no FUSE library version:\n" + p.stdout + p.stderr)
    return int(m.group(1)), int(m.group(2))


def grid_obj(n):
    """A distinct small OBJ per n: (n-1)^2 triangles."""
    lines = [f"v {i} {((i * j) % 7) * 0.1} {j}\n" for j in range(n) for i in range(n)]
    lines += [f"f {j * n + i + 1} {(j + 1) * n + i + 1} {j * n + i + 2}\n"
              for j in range(n - 1) for i in range(n - 1)]
    return "".join(lines)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def wait_for(cond, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.02)


def ls_l(d):
    """`ls -ln` of folder d, as a user runs it: {name: size}."""
    p = subprocess.run(["ls", "-ln", "--time-style=+%s", d], capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        raise AssertionError(f"ls -ln {d}: {p.returncode}\n{p.stderr}")
    out = {}
    for line in p.stdout.splitlines()[1:]:  # "total N" first
        f = line.split(None, 6)
        out[f[6]] = int(f[4])
    return out


def descendants(pid):
    """Every live process below pid."""
    kids = {}
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat") as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        kids.setdefault(int(fields[1]), []).append(int(e))
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
    except OSError:
        return False
    return st[st.rindex(")") + 2] != "Z"


class Base(TreeCase):
    def setUp(self):
        super().setUp()
        os.makedirs(self.src)

    def folder(self, name, models, broken=()):
        d = os.path.join(self.src, name)
        os.makedirs(d)
        for i, m in enumerate(models):
            write(os.path.join(d, m + ".obj"), grid_obj(5 + i))
        for m in broken:
            write(os.path.join(d, m + ".obj"), "v 0 0 0\nf 1 2 3\n")  # face index out of range
        write(os.path.join(d, "README.txt"), "not a model\n")
        return d

    def expected_sizes(self, d):
        """{view name: size} of meshfs-convert's output for folder d, converted
        from SRC as the mount sees it (the .fmi model= path starts at SRC)."""
        out = os.path.join(self.tmp, "expected")
        shutil.rmtree(out, ignore_errors=True)
        convert([self.src], out, "-f", VIEWS, "-j", "2")
        od = os.path.join(out, os.path.relpath(d, self.src))
        return {f: os.path.getsize(os.path.join(od, f)) for f in os.listdir(od)
                if not f.startswith(".")}


@unittest.skipIf(fuse_version() < (3, 17),
                 "libfuse < 3.17 never lets the kernel run a folder's lookups and readdir in "
                 "parallel (no PARALLEL_DIROPS): a listing waits for a lookup that converts")
class ListingNeverWaits(Base):
    def listing_while_held(self, prefetch):
        d = self.folder("d", ["a", "b", "held"])
        release = os.path.join(self.tmp, "release")
        env = dict(os.environ, MESHFS_TEST_CONVERT_HOLD="held.obj:" + release)
        opts = ["formats=" + VIEWS, "convert_jobs=2", "prefetch=" + prefetch]
        with Mount(self.src, self.mnt, self.cache, *opts, env=env) as m:
            md = os.path.join(self.mnt, "d")
            # a and b warm; no listing before, so nothing is prefetched
            for n in ("a", "b"):
                self.assertGreater(os.stat(os.path.join(md, n + ".gmf")).st_size, 0)
            self.assertEqual(m.stats()["conversions"], 2)
            got = {}

            def reader():
                got["size"] = os.stat(os.path.join(md, "held.gmf")).st_size
            t = threading.Thread(target=reader)
            t.start()
            wait_for(lambda: m.stats()["conversions_running"] == 1, "the held conversion to start")

            # readdir: every name, the held model's views too
            names = os.listdir(md)
            for n in ["held.obj", "held.gmf", "a.gmf", "b.fmd", "README.txt"]:
                self.assertIn(n, names)
            # ls, find -ls and stats of every other name in the folder
            p = subprocess.run(["ls", md], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("held.gmf", p.stdout.split())
            others = [n for n in names if not n.startswith("held.") or n == "held.obj"]
            sizes = {n: os.lstat(os.path.join(md, n)).st_size for n in others}
            self.assertGreater(sizes["a.gmf"], 0)
            self.assertEqual(sizes["held.obj"], os.path.getsize(os.path.join(d, "held.obj")))
            p = subprocess.run(["ls", "-ln"] + [os.path.join(md, n) for n in others],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            p = subprocess.run(["find", md, "-maxdepth", "1", "!", "-name", "held.*", "-ls"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("a.gmf", p.stdout)
            # the mount's root and the folder's parent listing too
            self.assertEqual(sorted(os.listdir(self.mnt)), ["d"])

            # all of that came back while the conversion was still held
            s = m.stats()
            self.assertEqual(s["conversions_running"], 1, "the held conversion ended early")
            self.assertTrue(t.is_alive(), "the held reader returned before the listing")
            self.assertNotIn("size", got)

            open(release, "w").close()
            t.join(120)
            self.assertFalse(t.is_alive())
            self.assertGreater(got["size"], 0)
            self.assertEqual(m.stats()["conversions"], 3)
            self.assertEqual(m.stats()["conversions_running"], 0)

    def test_listing_while_a_conversion_is_held(self):
        self.listing_while_held("0")

    def test_listing_while_a_conversion_is_held_with_prefetch(self):
        self.listing_while_held("256")

    def test_listing_while_a_prefetch_is_held(self):
        # The held conversion runs on the prefetcher's thread (queued by a
        # cold stat after a listing); a listing still never waits for it.
        d = self.folder("d", ["a", "held"])
        release = os.path.join(self.tmp, "release")
        env = dict(os.environ, MESHFS_TEST_CONVERT_HOLD="held.obj:" + release)
        with Mount(self.src, self.mnt, self.cache, "formats=" + VIEWS, "convert_jobs=2",
                   env=env) as m:
            md = os.path.join(self.mnt, "d")
            self.assertIn("held.gmf", os.listdir(md))
            self.assertGreater(os.stat(os.path.join(md, "a.gmf")).st_size, 0)  # queues held
            wait_for(lambda: m.stats()["conversions_running"] == 1, "the prefetch to start")
            self.assertGreaterEqual(m.stats()["prefetched"], 1)
            for _ in range(3):
                names = os.listdir(md)
                self.assertIn("held.fmi", names)
                self.assertIn("d", ls_l(self.mnt))
                self.assertGreater(os.lstat(os.path.join(md, "a.fmd")).st_size, 0)
            self.assertEqual(m.stats()["conversions_running"], 1)
            open(release, "w").close()
            # the held model's view: its reader waits for that one conversion
            self.assertGreater(os.stat(os.path.join(md, "held.gmf")).st_size, 0)
            self.assertEqual(m.stats()["conversions"], 2)
            self.assertEqual(tmp_leftovers(self.cache), [])


class Prefetch(Base):
    MODELS = ["m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"]

    def mount(self, *opts, sleep="1"):
        env = dict(os.environ, MESHFS_TEST_WORKER_SLEEP=sleep)
        return Mount(self.src, self.mnt, self.cache, "formats=" + VIEWS, "log_level=info", *opts,
                     env=env)

    def check_sizes(self, listed, want, names):
        for n in names:
            for f in FORMATS:
                v = f"{n}.{f}"
                self.assertIn(v, listed)
                self.assertIn(v, want)
                self.assertEqual(listed[v], want[v], v)

    def test_ls_l_converts_convert_jobs_at_once(self):
        # A bad model in the middle of the queue: it fails, the rest go on.
        d = self.folder("many", self.MODELS, broken=["m3x"])
        want = self.expected_sizes(d)
        with self.mount("convert_jobs=2") as m:
            listed = ls_l(os.path.join(self.mnt, "many"))
            s = m.stats()
            self.assertEqual(s["conversions"], 9, "a model converted twice, or not at all")
            self.assertEqual(s["conversion_failures"], 1)
            self.assertEqual(s["conversions_peak"], 2,
                             "ls -l did not convert convert_jobs models at once")
            self.assertGreaterEqual(s["prefetched"], 1)
            # what readers converted first is dequeued and skipped, not converted again
            wait_for(lambda: m.stats()["prefetch_queued"] == 0, "the queue to drain", 10)
            self.check_sizes(listed, want, self.MODELS)
            for f in FORMATS:
                self.assertEqual(listed[f"m3x.{f}"], 0)  # failed: shown empty
            self.assertEqual(listed["README.txt"], len("not a model\n"))
            # warm now: a second ls -l converts nothing and queues nothing
            self.assertEqual(ls_l(os.path.join(self.mnt, "many")), listed)
            s2 = m.stats()
            self.assertEqual(s2["conversions"], 9)
            self.assertEqual(s2["prefetched"], s["prefetched"])
            wait_for(lambda: "models done in many in" in m.output(), "the fill's last line", 10)
            log = m.output()
        # at least 9 conversions of >= 1 s, two at a time: over 2 s, so a
        # progress line, and a final one with the failure
        self.assertRegex(log, r"converting: \d+ of 9 models done in many, \d+\.\d models/s")
        self.assertRegex(log, r"converting: 9 of 9 models done in many in \d+\.\d s, 1 failed")

    def test_ls_l_of_a_listing_the_kernel_kept(self):
        # ls, then ls -l: the second listing is the kernel's (no READDIR
        # reaches the daemon), and still its stats convert two at a time.
        d = self.folder("many", self.MODELS[:4])
        want = self.expected_sizes(d)
        settle(d)
        with self.mount("convert_jobs=2") as m:
            md = os.path.join(self.mnt, "many")
            names = sorted(os.listdir(md))
            n = m.stats()["readdir_requests"]
            self.assertEqual(sorted(os.listdir(md)), names)
            self.assertEqual(m.stats()["readdir_requests"], n, "the listing was not kept")
            listed = ls_l(md)
            s = m.stats()
            self.assertEqual(s["readdir_requests"], n, "ls -l was not served the kept listing")
            self.assertEqual(sorted(listed), names)
            self.assertEqual(s["conversions"], 4)
            self.assertEqual(s["conversions_peak"], 2)
            self.check_sizes(listed, want, self.MODELS[:4])

    def test_prefetch_off_converts_one_at_a_time(self):
        d = self.folder("many", self.MODELS[:4])
        want = self.expected_sizes(d)
        with self.mount("convert_jobs=2", "prefetch=0") as m:
            listed = ls_l(os.path.join(self.mnt, "many"))
            s = m.stats()
            self.assertEqual(s["conversions"], 4)
            self.assertEqual(s["conversions_peak"], 1)
            self.assertEqual(s["prefetched"], 0)
            self.check_sizes(listed, want, self.MODELS[:4])
        self.assertNotIn("converting:", m.output())

    def test_stat_without_listing_prefetches_nothing(self):
        # An engine opening one model is not a listing: its neighbours wait.
        self.folder("many", self.MODELS[:3])
        with self.mount("convert_jobs=2") as m:
            self.assertGreater(os.stat(os.path.join(self.mnt, "many", "m1.gmf")).st_size, 0)
            time.sleep(0.5)  # room for a wrongly queued prefetch to start
            s = m.stats()
            self.assertEqual(s["conversions"], 1)
            self.assertEqual(s["prefetched"], 0)
            self.assertEqual(s["prefetch_queued"], 0)

    @unittest.skipIf(fuse_version() < (3, 17),
                     "libfuse < 3.17: no PARALLEL_DIROPS, so the reader of other/x waits in "
                     "the kernel behind the held lookup in the same folder, never for a slot")
    def test_a_reader_goes_before_the_queue(self):
        # Two slots: one held by a reader of other/held, one by a prefetch
        # of one of m1..m4 while the others wait for a slot.  A reader of
        # other/x coming then gets the next free slot, before them.
        self.folder("many", self.MODELS[:5])
        self.folder("other", ["x", "held"])
        release = os.path.join(self.tmp, "release")
        release_m = {i: os.path.join(self.tmp, f"release-m{i}") for i in range(1, 5)}
        # held and every prefetch last until the test lets them go: the
        # counts below are the order of events, whatever the machine's load.
        # Which queued prefetch gets the first slot is a race between the
        # prefetch threads; the hold's FILE.held says which one it was.
        # The stat of m0 waits 300 ms after queueing the prefetches, so the
        # prefetch threads reach the free slot first, every run: they must
        # leave it to m0's own conversion (convert.c, mfs_fs_fg_coming).
        env = dict(os.environ, MESHFS_TEST_FG_DELAY_MS="300", MESHFS_TEST_CONVERT_HOLD=",".join(
            [f"held.obj:{release}"] + [f"m{i}.obj:{f}" for i, f in release_m.items()]))
        with Mount(self.src, self.mnt, self.cache, "formats=" + VIEWS, "convert_jobs=2",
                   env=env) as m:
            held = threading.Thread(
                target=lambda: os.stat(os.path.join(self.mnt, "other", "held.gmf")))
            held.start()
            x = threading.Thread(
                target=lambda: os.stat(os.path.join(self.mnt, "other", "x.gmf")))
            try:
                wait_for(lambda: m.stats()["conversions_running"] == 1, "the held conversion")
                md = os.path.join(self.mnt, "many")
                os.listdir(md)
                self.assertGreater(os.stat(os.path.join(md, "m0.gmf")).st_size, 0)
                wait_for(lambda: m.stats()["conversions_running"] == 2, "a prefetch")
                self.assertEqual(m.stats()["conversions"], 1)  # m0
                started = [f for f in release_m.values() if os.path.exists(f + ".held")]
                self.assertEqual(len(started), 1, started)
                # the reader of x waits for a slot, as the prefetch of m2 does
                x.start()
                wait_for(lambda: m.stats()["slot_waiters"] == 1, "the reader of x waiting")
                open(started[0], "w").close()
                x.join(120)
                self.assertFalse(x.is_alive())
                # m0, the prefetch and x: x took its slot before the queued ones
                s = m.stats()
                self.assertEqual(s["conversions"], 3)
                self.assertGreaterEqual(s["prefetch_queued"], 1)
            finally:
                for f in list(release_m.values()) + [release]:
                    open(f, "w").close()
                held.join(120)
                if x.is_alive():
                    x.join(120)

    def test_unmount_with_models_queued(self):
        self.folder("many", self.MODELS[:6])
        m = self.mount("convert_jobs=1", sleep="2")
        with m:
            md = os.path.join(self.mnt, "many")
            os.listdir(md)
            self.assertGreater(os.stat(os.path.join(md, "m0.gmf")).st_size, 0)
            s = m.stats()
            self.assertGreaterEqual(s["prefetch_queued"], 3)
            wait_for(lambda: m.stats()["conversions_running"] == 1, "a prefetch to run")
            workers = descendants(m.proc.pid)
            self.assertTrue(workers, "no worker process under the daemon")
            r = subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            # the running conversion may finish (<= 2 s); the queued ones do not start
            self.assertEqual(m.proc.wait(timeout=30), 0, m.output())
            log = m.output()
        self.assertRegex(log, r"converting: unmounted with [3-5] queued models not converted")
        self.assertLessEqual(len(re.findall(r"converted in", log)), 3, log)
        wait_for(lambda: not any(alive(p) for p in workers), "the workers to exit", 10)
        self.assertEqual(os.listdir(os.path.join(self.cache, "tmp")), [])


class Option(Base):
    def test_bad_values_exit_2_naming_the_option(self):
        os.makedirs(self.mnt)
        for bad in ["abc", "-1", "1.5", "65537", ""]:
            p = subprocess.run([tool("meshfs"), "-f", "-o", "prefetch=" + bad, self.src, self.mnt],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2, (bad, p.stderr))
            self.assertIn("-o prefetch", p.stderr, bad)
            self.assertFalse(os.path.ismount(self.mnt))

    def test_help_names_the_option(self):
        p = subprocess.run([tool("meshfs"), "--help"], capture_output=True, text=True, timeout=30)
        self.assertIn("-o prefetch=N", p.stdout)


if __name__ == "__main__":
    run_tests()
