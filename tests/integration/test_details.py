"""Issue 32, the details a daily user meets: meshfs-inspect's verdicts and
numbers, packages of folders where nothing converted, the cache cap, the
stats' units and the daemon's log file.  (Versions, --help, option typos and
double mounts are in test_install.py, with the README/man/--help checks.)"""
import errno
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
import unittest

from common import SOURCE, tool
from mount import Mount

PKG = "game_resources.lgepkg"

EXAMPLES = os.path.join(SOURCE, "examples", "assets")


def sh(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)


class Inspect(unittest.TestCase):
    """Item 7: --check says ok per file that passes, -q says nothing, and no
    number is printed as -0."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="meshfs-details-")
        cls.out = os.path.join(cls._tmp.name, "out")
        p = sh([tool("meshfs-convert"), "--no-cache", "-q", "-o", cls.out, EXAMPLES])
        assert p.returncode == 0, p.stderr
        cls.views = sorted(os.path.join(d, n) for d, _, ns in os.walk(cls.out) for n in ns
                           if os.path.splitext(n)[1] in (".fmd", ".fmi", ".gmf", ".dem", ".vrt",
                                                         ".tri", ".sph", ".tex", ".lgepkg"))
        assert len(cls.views) > 20, cls.views

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def test_check_prints_ok_per_file_that_passes(self):
        p = sh([tool("meshfs-inspect"), "--check"] + self.views)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        oks = [l for l in p.stdout.splitlines() if l.endswith(": ok")]
        self.assertEqual(oks, [v + ": ok" for v in self.views])
        # without --check nothing was checked, so nothing is said to be ok
        p = sh([tool("meshfs-inspect")] + self.views)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn(": ok", p.stdout)

    def test_a_failing_file_gets_no_ok(self):
        bad = os.path.join(self._tmp.name, "bad.gmf")
        with open(bad, "wb") as f:
            f.write(b"not a gmf")
        p = sh([tool("meshfs-inspect"), "--check", self.views[0], bad])
        self.assertEqual(p.returncode, 1)
        self.assertIn(self.views[0] + ": ok\n", p.stdout)
        self.assertNotIn(bad + ": ok", p.stdout)
        self.assertIn("meshfs-inspect: ", p.stderr)
        self.assertIn("bad.gmf", p.stderr)

    def test_quiet_prints_nothing_on_stdout(self):
        for flag in ("-q", "--quiet"):
            p = sh([tool("meshfs-inspect"), "--check", flag] + self.views)
            self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "", ""), flag)
            p = sh([tool("meshfs-inspect"), "--json", flag] + self.views)
            self.assertEqual((p.returncode, p.stdout), (0, ""), flag)
        bad = os.path.join(self._tmp.name, "bad.tri")
        with open(bad, "wb") as f:
            f.write(b"\x01")
        p = sh([tool("meshfs-inspect"), "--check", "-q", bad])
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertIn("bad.tri", p.stderr)  # the reason stays

    def test_no_minus_zero_in_any_number(self):
        minus_zero = re.compile(r"(?<![\w.])-0(?![.\d]|e)")
        for args in (["--check"], ["--check", "--json"]):
            p = sh([tool("meshfs-inspect")] + args + self.views)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("bounds" if "--json" not in args else '"cmin"', p.stdout)
            self.assertEqual(minus_zero.findall(p.stdout), [], args)


class Packages(unittest.TestCase):
    """Item 8: a folder where no model converted has no package (mount and
    meshfs-convert), --check fails a package of no model, and the
    package's user.meshfs.error is one line per model, as a model's is."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="meshfs-details-")
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        shutil.copytree(os.path.join(EXAMPLES, "crate"), os.path.join(self.src, "mixed"))
        os.makedirs(os.path.join(self.src, "bad"))
        for folder, name in (("bad", "a.obj"), ("bad", "b.obj"), ("mixed", "broken.obj"),
                             ("mixed", "zbroken.obj")):
            open(os.path.join(self.src, folder, name), "wb").close()  # assimp refuses an empty .obj
        self.mnt = os.path.join(self.tmp, "mnt")
        self.cache = os.path.join(self.tmp, "cache")

    def tearDown(self):
        self._tmp.cleanup()

    def test_mount_shows_no_package_where_no_model_converted(self):
        with Mount(self.src, self.mnt, self.cache):
            bad = os.path.join(self.mnt, "bad")
            with self.assertRaises(OSError) as cm:
                os.stat(os.path.join(bad, PKG))  # resolving it converts both: both fail
            self.assertEqual(cm.exception.errno, errno.ENOENT)
            self.assertNotIn(PKG, os.listdir(bad))
            self.assertIn("a.vrt", os.listdir(bad))
            with self.assertRaises(OSError) as cm:
                open(os.path.join(bad, PKG), "rb")
            self.assertEqual(cm.exception.errno, errno.ENOENT)
            # a folder where one model converted keeps its package
            mixed = os.path.join(self.mnt, "mixed")
            self.assertIn(PKG, os.listdir(mixed))
            with open(os.path.join(mixed, PKG), "rb") as f:
                self.assertEqual(struct.unpack("<i", f.read(48)[40:44])[0], 4)  # crate's 4 chunks
            err = os.getxattr(os.path.join(mixed, PKG), "user.meshfs.error").decode()
            lines = err.split("\n")
            self.assertEqual(lines[-1], "", err)  # every entry a line, as on a model
            self.assertEqual([l.split(":")[0:2] for l in lines[:-1]],
                             [["left out", " broken.obj"], ["left out", " zbroken.obj"]], err)
            self.assertNotIn("; ", err)
            model_err = os.getxattr(os.path.join(mixed, "broken.obj"), "user.meshfs.error").decode()
            self.assertTrue(model_err.endswith("\n") and "; " not in model_err, model_err)

    def test_convert_writes_no_package_where_no_model_converted(self):
        out = os.path.join(self.tmp, "out")
        os.makedirs(os.path.join(out, "bad"))
        with open(os.path.join(out, "bad", PKG), "wb") as f:  # an earlier run's
            f.write(b"stale")
        p = sh([tool("meshfs-convert"), "--no-cache", "-o", out, self.src])
        self.assertEqual(p.returncode, 1, p.stderr)  # models failed
        self.assertFalse(os.path.exists(os.path.join(out, "bad", PKG)))
        self.assertIn(f"meshfs-convert: {out}/bad/{PKG}: no model converted: none written\n", p.stderr)
        self.assertTrue(os.path.exists(os.path.join(out, "mixed", PKG)))
        self.assertNotIn("mixed/" + PKG + ": no model", p.stderr)

    def test_check_fails_a_package_of_no_model(self):
        empty = os.path.join(self.tmp, PKG)
        with open(empty, "wb") as f:
            f.write(b"game_resources".ljust(20, b"\0") + b"1.0".ljust(20, b"\0") + struct.pack("<ii", 0, 0))
        p = sh([tool("meshfs-inspect"), "--check", empty])
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("numChunks 0, a package with no model", p.stderr)
        self.assertNotIn(": ok", p.stdout)
        p = sh([tool("meshfs-inspect"), empty])  # without --check: a warning, read fine
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("warning: offset 40: numChunks 0, a package with no model", p.stdout)


GIB = 1 << 30


class CacheCap(unittest.TestCase):
    """Item 1: `meshfs-cache max-size SIZE` / -M SIZE stores a cap in the
    cache folder (bare number: GiB, 0: none) that mounts, meshfs-convert and
    warm honour, cache_size= overrides, stats shows; trim takes the same
    units."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="meshfs-details-")
        self.tmp = self._tmp.name
        self.cache = os.path.join(self.tmp, "cache")
        self.src = os.path.join(self.tmp, "src")
        shutil.copytree(os.path.join(EXAMPLES, "crate"), os.path.join(self.src, "crate"))

    def tearDown(self):
        self._tmp.cleanup()

    def cache_tool(self, *args, rc=0):
        p = sh([tool("meshfs-cache"), "--cache-dir", self.cache] + list(args))
        self.assertEqual(p.returncode, rc, p.stdout + p.stderr)
        return p

    def stats(self):
        import json
        return json.loads(self.cache_tool("--json", "stats").stdout)

    def convert(self):
        p = sh([tool("meshfs-convert"), "--cache-dir", self.cache, "-q", "-o",
                os.path.join(self.tmp, "out"), self.src])
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_bare_number_is_gib_and_stats_show_it(self):
        self.convert()  # makes the cache
        self.assertIsNone(self.stats()["max_size"])
        self.assertIn("max size           none set", self.cache_tool("stats").stdout)
        p = self.cache_tool("max-size", "30")
        self.assertEqual(p.stdout, "max size 30G (mounts, meshfs-convert and warm use it from their "
                                   "next start)\n")
        with open(os.path.join(self.cache, "max_size")) as f:
            self.assertEqual(f.read(), f"max_size {30 * GIB}\n")
        self.assertEqual(self.stats()["max_size"], 30 * GIB)
        self.assertIn("\nmax size           30G\n", self.cache_tool("stats").stdout)
        self.cache_tool("-M", "512M")
        self.assertEqual(self.stats()["max_size"], 512 << 20)
        self.cache_tool("--max-size=0")
        self.assertEqual(self.stats()["max_size"], 0)
        self.assertIn("\nmax size           0 (no cap)\n", self.cache_tool("stats").stdout)
        self.assertEqual(self.cache_tool("max-size").stdout, "max size 0 (no cap)\n")
        p = self.cache_tool("max-size", "lots", rc=2)
        self.assertIn("max-size SIZE", p.stderr)
        self.assertIn("lots", p.stderr)
        self.assertEqual(self.stats()["max_size"], 0)  # unchanged

    def test_convert_honours_the_stored_cap(self):
        self.convert()
        self.assertGreater(self.stats()["bytes"], 4096)
        self.cache_tool("-M", "1K")
        self.convert()
        st = self.stats()
        self.assertLessEqual(st["bytes"], 1024)
        self.assertEqual(st["cap"], 1024)  # the run's cap, recorded

    def test_warm_honours_the_stored_cap(self):
        self.convert()
        self.cache_tool("clear")
        self.cache_tool("warm", "-q", self.src)
        self.assertGreater(self.stats()["bytes"], 4096)  # no cap stored: warm trims nothing
        self.cache_tool("clear")
        self.cache_tool("max-size", "1K")
        self.cache_tool("warm", "-q", self.src)
        self.assertLessEqual(self.stats()["bytes"], 1024)

    def test_mount_honours_it_and_cache_size_overrides(self):
        self.convert()
        self.cache_tool("max-size", "3")
        mnt = os.path.join(self.tmp, "mnt")
        with Mount(self.src, mnt, self.cache):
            self.assertEqual(self.stats()["cap"], 3 * GIB)  # recorded when it opened the cache
        with Mount(self.src, mnt, self.cache, "cache_size=5M"):
            self.assertEqual(self.stats()["cap"], 5 << 20)
        self.cache_tool("max-size", "0")
        with Mount(self.src, mnt, self.cache):
            self.assertIsNone(self.stats()["cap"])  # no cap
            self.assertIn("\ncap                none (the last", self.cache_tool("stats").stdout)

    def test_trim_takes_the_same_units(self):
        self.convert()
        before = self.stats()["bytes"]
        p = self.cache_tool("trim", "1")  # 1 GiB, not 1 byte
        self.assertIn("removed 0 files", p.stdout)
        self.assertEqual(self.stats()["bytes"], before)
        self.cache_tool("trim", "0")
        self.assertEqual(self.stats()["bytes"], 0)


class LogFile(unittest.TestCase):
    """Item 3: -o log_file=PATH takes a daemonised mount's log, and a mount
    going into the background with neither a syslog socket nor log_file
    says so once, on stderr, before it detaches."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="meshfs-details-")
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        shutil.copytree(os.path.join(EXAMPLES, "crate"), os.path.join(self.src, "props"))
        os.makedirs(os.path.join(self.src, "bad"))
        open(os.path.join(self.src, "bad", "broken.obj"), "wb").close()
        self.mnt = os.path.join(self.tmp, "mnt")
        os.makedirs(self.mnt)
        self.cache = os.path.join(self.tmp, "cache")

    def tearDown(self):
        subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True)
        self.wait_daemon_gone()
        self._tmp.cleanup()

    def wait_daemon_gone(self):
        """The daemonised meshfs goes on after its unmount (it stores what
        it converted, closes the cache): the cache folder is removed only
        once it has exited."""
        me = (self.mnt + "\0").encode()
        deadline = time.time() + 30
        while time.time() < deadline:
            alive = False
            for p in os.listdir("/proc"):
                if not p.isdigit():
                    continue
                try:
                    with open(f"/proc/{p}/cmdline", "rb") as f:
                        cmd = f.read()
                except OSError:
                    continue
                if cmd.startswith(tool("meshfs").encode() + b"\0") and me in cmd:
                    alive = True
                    break
            if not alive:
                return
            time.sleep(0.05)

    def daemonised(self, *opts, cwd=None):
        o = ",".join(["cache_dir=" + self.cache] + list(opts))
        return sh([tool("meshfs"), "-o", o, self.src, self.mnt], cwd=cwd)

    def unmount(self):
        subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True, check=True)
        self.wait_daemon_gone()

    def test_log_file_gets_the_daemonised_mounts_lines(self):
        p = self.daemonised("log_file=mount.log", "log_level=info", cwd=self.tmp)  # relative: to cwd
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        with self.assertRaises(OSError):
            open(os.path.join(self.mnt, "bad", "broken.dem"), "rb").read()
        with open(os.path.join(self.mnt, "props", "crate.dem"), "rb") as f:
            self.assertGreater(len(f.read()), 0)
        self.unmount()
        with open(os.path.join(self.tmp, "mount.log")) as f:
            lines = f.read().splitlines()
        line = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d meshfs\[\d+\]: "
        self.assertTrue(any(re.match(line + r"warning: bad/broken\.obj: conversion failed: import failed", l)
                            for l in lines), lines)
        self.assertTrue(any(re.match(line + r"info: props/crate\.obj: converted in [0-9.]+ s$", l)
                            for l in lines), lines)
        for l in lines:
            self.assertRegex(l, line)
        self.assertEqual(os.stat(os.path.join(self.tmp, "mount.log")).st_mode & 0o777, 0o640)

    def test_a_log_file_that_cannot_be_opened_is_a_usage_error(self):
        p = self.daemonised("log_file=" + os.path.join(self.tmp, "no", "such", "dir.log"))
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, f"meshfs: -o log_file={self.tmp}/no/such/dir.log: No such file or directory\n")
        self.assertFalse(os.path.ismount(self.mnt))

    def test_no_syslog_and_no_log_file_is_said_once(self):
        if os.path.exists("/dev/log"):
            self.skipTest("this machine has /dev/log (test_logging's Syslog covers that case)")
        p = self.daemonised()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.ismount(self.mnt))
        self.assertEqual(p.stderr, "meshfs: warning: no syslog socket (/dev/log) and no -o log_file: once in "
                                   "the background, this mount logs nothing (failures are then only in "
                                   "user.meshfs.error); give -o log_file=PATH, or run it with -f\n")
        self.unmount()
        # in the foreground the log is stderr: nothing to warn about
        with Mount(self.src, self.mnt, self.cache) as m:
            self.assertNotIn("syslog", m.output())


class StatsUnits(unittest.TestCase):
    """Item 2: stats count as ccache does: a hit or a miss is one model
    resolved for one run or one open, and every stored view is an entry."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="meshfs-details-")
        self.tmp = self._tmp.name
        self.cache = os.path.join(self.tmp, "cache")
        self.src = os.path.join(self.tmp, "src")
        shutil.copytree(os.path.join(EXAMPLES, "crate"), os.path.join(self.src, "crate"))

    def tearDown(self):
        self._tmp.cleanup()

    def stats(self):
        import json
        p = sh([tool("meshfs-cache"), "--cache-dir", self.cache, "--json", "stats"])
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def convert(self):
        p = sh([tool("meshfs-convert"), "--cache-dir", self.cache, "-q", "-o",
                os.path.join(self.tmp, "out"), self.src])
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_one_conversion_and_one_rerun_are_one_miss_and_one_hit(self):
        self.convert()
        s = self.stats()
        self.assertEqual((s["hits"], s["misses"], s["conversions"]), (0, 1, 1), s)
        self.convert()
        s = self.stats()
        self.assertEqual((s["hits"], s["misses"], s["conversions"]), (1, 1, 1), s)
        self.assertGreater(s["view_hits"], 1)  # per view, as extra counts
        # every stored view is an entry, the small ones inside the model's too
        self.assertEqual(s["entries"], s["entry_files"] + s["views_inside"])
        self.assertEqual(s["entries"], 9, s)  # crate's views, all small: inside its model entry
        p = sh([tool("meshfs-cache"), "--cache-dir", self.cache, "stats"])
        self.assertIn("\nhits               1 (50.0%)\nmisses             1\n", p.stdout)
        self.assertRegex(p.stdout, r"\nentries            9 \(\d+ in files of their own, \d+ inside manifests\)\n")
        self.assertRegex(p.stdout, r"\nview hits          \d+\nview misses        1\n")

    def test_a_mount_counts_one_per_open(self):
        mnt = os.path.join(self.tmp, "mnt")
        with Mount(self.src, mnt, self.cache):
            with open(os.path.join(mnt, "crate", "crate.gmf"), "rb") as f:
                f.read()
            with open(os.path.join(mnt, "crate", "crate.dem"), "rb") as f:
                f.read()
        s = self.stats()
        # the first open converted the model; the second was served
        self.assertEqual((s["misses"], s["hits"], s["conversions"]), (1, 1, 1), s)


if __name__ == "__main__":
    unittest.main()
