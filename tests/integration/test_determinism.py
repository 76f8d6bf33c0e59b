"""Same input and options -> same bytes, run after run, and with different
parallelism."""
import os
import unittest

from common import CORPUS, SOURCE, convert, tempdir, tree_bytes

INPUTS = [
    os.path.join(SOURCE, "examples", "assets"),
    os.path.join(CORPUS, "FBX", "animation_with_skeleton.fbx"),
    os.path.join(CORPUS, "X", "Testwuson.X"),
    os.path.join(CORPUS, "MD5", "SimpleCube.md5mesh"),
    os.path.join(CORPUS, "SMD", "WusonSMD.smd"),
    os.path.join(CORPUS, "glTF2", "BoxTextured-glTF", "BoxTextured.gltf"),
    os.path.join(CORPUS, "Collada", "duck.dae"),
    os.path.join(CORPUS, "OBJ", "spider.obj"),
]


class Determinism(unittest.TestCase):
    def test_convert_twice_same_bytes(self):
        for opts in ([], ["--pretrans", "--fmi-textures", "--reverse-winding"]):
            with tempdir() as a, tempdir() as b:
                pa, _ = convert(INPUTS, a, "-j", "1", *opts)
                pb, _ = convert(INPUTS, b, "-j", "4", *opts)
                self.assertEqual(pa.returncode, 0, pa.stderr)
                self.assertEqual(pb.returncode, 0, pb.stderr)
                ta, tb = tree_bytes(a), tree_bytes(b)
                self.assertGreater(len(ta), 7 * 10)
                self.assertEqual(sorted(ta), sorted(tb))
                for k in ta:
                    self.assertEqual(ta[k], tb[k], (k, opts))

    def test_options_change_only_their_formats(self):
        with tempdir() as a, tempdir() as b:
            convert(INPUTS[:1], a)
            convert(INPUTS[:1], b, "--fmi-textures", "--reverse-winding")
            ta, tb = tree_bytes(a), tree_bytes(b)
            for k in ta:
                ext = k.rsplit(".", 1)[1]
                if ext in ("fmi", "tri", "lgepkg"):  # the package holds the .tri
                    continue
                self.assertEqual(ta[k], tb[k], k)
            self.assertNotEqual(ta["crate/crate.fmi"], tb["crate/crate.fmi"])
            self.assertNotEqual(ta["crate/crate.tri"], tb["crate/crate.tri"])
            self.assertNotEqual(ta["crate/game_resources.lgepkg"], tb["crate/game_resources.lgepkg"])

    def test_vrt_layout_changes_only_vrt_and_tri(self):
        # a skinned model: the default .vrt has 64-byte vertices, the plain
        # one 32-byte vertices (as many or fewer: vertices that differ only
        # in skinning merge); .tri follows the layout, .sph does not
        fbx = INPUTS[1]
        with tempdir() as a, tempdir() as b:
            pa, _ = convert([fbx], a)
            pb, _ = convert([fbx], b, "--vrt-layout", "plain")
            self.assertEqual((pa.returncode, pb.returncode), (0, 0), pa.stderr + pb.stderr)
            ta, tb = tree_bytes(a), tree_bytes(b)
            self.assertEqual(sorted(ta), sorted(tb))
            vrt = [k for k in ta if k.endswith(".vrt")]
            self.assertEqual(len(vrt), 1)
            skinned, plain = ta[vrt[0]], tb[vrt[0]]
            n64, n32 = (len(skinned) - 12) // 64, (len(plain) - 12) // 32
            self.assertEqual(len(skinned), 12 + 64 * n64)
            self.assertEqual(len(plain), 12 + 32 * n32)
            self.assertGreater(n32, 0)
            self.assertLessEqual(n32, n64)
            for k in ta:
                if k.rsplit(".", 1)[1] not in ("vrt", "tri", "lgepkg"):
                    self.assertEqual(ta[k], tb[k], k)


if __name__ == "__main__":
    unittest.main()
