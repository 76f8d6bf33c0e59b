"""Issue 32, the details a daily user meets: meshfs-inspect's verdicts and
numbers, packages of folders where nothing converted, the cache cap, the
stats' units and the daemon's log file.  (Versions, --help, option typos and
double mounts are in test_install.py, with the README/man/--help checks.)"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from common import SOURCE, tool

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


if __name__ == "__main__":
    unittest.main()
