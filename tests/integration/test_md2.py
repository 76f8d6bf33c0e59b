"""Quake 2 models whose frames end exactly at the end of the file (issue 34
item 3): MD2 files without GL commands, which id's loaders never read and
many exporters leave out.  assimp's MD2 importer refuses them ("some
offsets are outside the file", a >= where > is meant); meshfs shows the
parser one zero byte past the end (src/import/iofs.c, docs/import.md), so
they convert, and give the same views as the same model with a GL
command list after its frames.  The models are built here, byte by byte,
from the MD2 layout (id's qfiles.h)."""
import json
import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TreeCase, run, run_tests, tool  # noqa: E402


def md2(glcmds):
    """A tetrahedron: 4 vertices, 4 triangles, 1 skin, 1 frame; with
    glcmds, a GL command list of one terminator after the frame."""
    nv, nst, ntri = 4, 3, 4
    framesize = 40 + 4 * nv
    ofs_skins = 68
    ofs_st = ofs_skins + 64
    ofs_tris = ofs_st + 4 * nst
    ofs_frames = ofs_tris + 12 * ntri
    ofs_gl = ofs_frames + framesize
    gl = struct.pack("<i", 0) if glcmds else b""
    hdr = struct.pack("<4s16i", b"IDP2", 8, 64, 64, framesize, 1, nv, nst, ntri, len(gl) // 4, 1,
                      ofs_skins, ofs_st, ofs_tris, ofs_frames, ofs_gl, ofs_gl + len(gl))
    skin = b"tet.png".ljust(64, b"\0")
    st = struct.pack("<6h", 0, 0, 64, 0, 0, 64)
    tris = b"".join(struct.pack("<6h", *t, 0, 1, 2) for t in ((0, 1, 2), (0, 3, 1), (1, 3, 2), (2, 3, 0)))
    # position = byte * scale + translate: (-1,-2,0), (99,-2,0), (-1,98,0), (-1,-2,100)
    frame = struct.pack("<6f", 0.5, 0.5, 0.5, -1, -2, 0) + b"stand01".ljust(16, b"\0")
    frame += bytes([0, 0, 0, 0, 200, 0, 0, 0, 0, 200, 0, 0, 0, 0, 200, 0])
    return hdr + skin + st + tris + frame + gl


class Md2AtEndOfFile(TreeCase):
    def test_frames_ending_at_the_end_of_the_file_convert(self):
        for sub, gl in (("bare", False), ("gl", True)):
            os.makedirs(os.path.join(self.src, sub))
            data = md2(gl)
            with open(os.path.join(self.src, sub, "tet.md2"), "wb") as f:
                f.write(data)
            # the layout as built: frames end at the end of the file, or 4
            # bytes before it
            ofs_frames, ofs_end = struct.unpack_from("<i", data, 4 + 4 * 13)[0], len(data)
            self.assertEqual(ofs_frames + 56, ofs_end - (4 if gl else 0))
        for sub in ("bare", "gl"):
            out = os.path.join(self.tmp, "out-" + sub)
            p = run([tool("meshfs-convert"), "--no-cache", "-o", out, os.path.join(self.src, sub)])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("1 converted, 0 up to date, 0 failed", p.stderr)
        names = sorted(os.listdir(os.path.join(self.tmp, "out-bare")))
        self.assertEqual(names, ["game_resources.lgepkg", "tet.dem", "tet.fmd", "tet.fmi", "tet.gmf",
                                 "tet.sph", "tet.tex", "tet.tri", "tet.vrt"])
        for n in names:
            if n == "tet.fmi":
                continue  # names the model's folder, which differs
            with open(os.path.join(self.tmp, "out-bare", n), "rb") as a, \
                    open(os.path.join(self.tmp, "out-gl", n), "rb") as b:
                self.assertEqual(a.read(), b.read(), n)
        views = [os.path.join(self.tmp, "out-bare", n) for n in names]
        p = run([tool("meshfs-inspect"), "--check", "--json"] + views)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        fmd = next(json.loads(line) for line in p.stdout.splitlines() if '"format":"fmd"' in line)
        self.assertEqual((fmd["triangles"], fmd["vertices"]), (4, 12))
        self.assertEqual((fmd["min"], fmd["max"]), ([-1, -2, 0], [99, 98, 100]))


if __name__ == "__main__":
    run_tests()
