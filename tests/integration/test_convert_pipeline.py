"""meshfs-convert where a build pipeline puts it: OUTDIR inside, or equal
to, an INPUT folder; a run stopped by a signal."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import tool  # noqa: E402
from test_convert_incremental import Base, summary, tree  # noqa: E402


class OutdirInInput(Base):
    def test_outdir_inside_input_is_never_an_input(self):
        # `meshfs-convert --copy-other -o assets/out assets`, run as a build
        # step again and again: each run took the last one's outputs for
        # inputs and copied them into out/out/..., one level more a run
        out = os.path.join("src", "out")
        p = self.convert("--copy-other", out=out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(summary(p), (5, 0, 0))
        first = tree(os.path.join(self.tmp, out))
        for _ in range(2):
            p = self.convert("--copy-other", out=out)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(summary(p), (0, 5, 0))
            self.assertEqual(tree(os.path.join(self.tmp, out)), first)
        self.assertNotIn("out", first)
        self.assertIn("crate/crate.gmf", first)
        self.assertIn("crate/textures/crate.png", first)

    def test_outdir_equal_to_input_is_refused(self):
        # views beside the models: the next run named the models' views
        # after the views it found (cone.ply.gmf beside cone.gmf), and the
        # package it wrote was taken for the folder's own and never updated
        before = tree(self.src)
        cone = os.path.join(self.src, "props", "cone.ply")
        for out, given in (("src", self.src), (os.path.join("src", "props"), cone)):
            p = self.convert(out=out, src=given)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(f"OUTDIR {os.path.join(self.tmp, out)} is the ", p.stderr)
            self.assertIn(given + ":", p.stderr)
            self.assertIn("give another folder", p.stderr)
            self.assertEqual(tree(self.src), before)
        # the default OUTDIR, the current folder, with a model in it
        p = subprocess.run([tool("meshfs-convert"), "--cache-dir", self.cache, "cone.ply"],
                           cwd=os.path.join(self.src, "props"), capture_output=True, text=True,
                           timeout=600)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("is the folder of INPUT cone.ply", p.stderr)
        self.assertEqual(tree(self.src), before)


if __name__ == "__main__":
    unittest.main()
