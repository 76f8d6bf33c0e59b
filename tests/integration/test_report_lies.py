"""A worker's report is untrusted input (docs/worker.md): one that lies about
an output's size, by a single byte as a compromised worker could, gets that
view refused, whether the view would live inside its model's entry (a small
one) or in an entry file of its own (a large one).  Nothing of it is stored
or remembered: the next, honest run converts it and serves meshfs-convert's
bytes.  Test builds only (MESHFS_TEST_REPORT_LIE in the worker)."""
import os
import shutil
import subprocess
import unittest

from common import SOURCE, convert, run_tests, tool, tree_bytes, TreeCase
from mount import Mount

PROPS = os.path.join(SOURCE, "examples", "assets", "props")


def grid(n):
    """An OBJ grid whose .vrt passes 16 KiB (an entry file of its own)."""
    lines = [f"v {i} {((i * j) % 7) * 0.1} {j}\n" for j in range(n) for i in range(n)]
    lines += [f"f {j * n + i + 1} {(j + 1) * n + i + 1} {j * n + i + 2}\n"
              for j in range(n - 1) for i in range(n - 1)]
    return "".join(lines)


class ReportLies(TreeCase):
    def setUp(self):
        super().setUp()
        os.makedirs(self.src)
        shutil.copy(os.path.join(PROPS, "tetra.stl"), self.src)
        with open(os.path.join(self.src, "grid.obj"), "w") as f:
            f.write(grid(60))
        out = os.path.join(self.tmp, "ref")
        p, _ = convert([self.src], out, "-f", "vrt")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.ref = tree_bytes(out)
        self.assertLess(len(self.ref["tetra.vrt"]), 16384)
        self.assertGreater(len(self.ref["grid.vrt"]), 16384)

    def lying(self):
        return dict(os.environ, MESHFS_TEST_REPORT_LIE="vrt")

    def test_meshfs_convert_refuses_a_size_the_output_does_not_have(self):
        out = os.path.join(self.tmp, "out")
        cache = os.path.join(self.tmp, "cc")
        p = subprocess.run([tool("meshfs-convert"), "-q", "-f", "vrt", "--cache-dir", cache,
                            "-o", out, self.src], capture_output=True, text=True, timeout=300,
                           env=self.lying())
        self.assertNotEqual(p.returncode, 0, p.stderr)
        for model in ("tetra.stl", "grid.obj"):
            line = next((l for l in p.stderr.splitlines() if model in l and "report says" in l), None)
            self.assertIsNotNone(line, p.stderr)
            self.assertRegex(line, r"worker output \.vrt: \d+ bytes, report says \d+")
        self.assertFalse(os.path.exists(os.path.join(out, "tetra.vrt")))
        self.assertFalse(os.path.exists(os.path.join(out, "grid.vrt")))
        # not remembered: the honest run converts both, with the right bytes
        p = subprocess.run([tool("meshfs-convert"), "-q", "-f", "vrt", "--cache-dir", cache,
                            "-o", out, self.src], capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = tree_bytes(out)
        for name in ("tetra.vrt", "grid.vrt"):
            self.assertEqual(got[name], self.ref[name], name)

    def test_the_mount_refuses_it_and_stays_up(self):
        with Mount(self.src, self.mnt, self.cache, "formats=vrt", env=self.lying()) as m:
            for name in ("tetra.vrt", "grid.vrt"):
                with self.assertRaises(OSError):
                    with open(os.path.join(self.mnt, name), "rb") as f:
                        f.read()
            log = m.output()
            self.assertIn("report says", log)
            self.assertTrue(m.alive())
        with Mount(self.src, self.mnt, self.cache, "formats=vrt") as m:
            for name in ("tetra.vrt", "grid.vrt"):
                with open(os.path.join(self.mnt, name), "rb") as f:
                    self.assertEqual(f.read(), self.ref[name], name)
            self.assertEqual(m.stats()["conversions"], 2)  # one a model


if __name__ == "__main__":
    run_tests()
