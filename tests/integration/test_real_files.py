#!/usr/bin/env python3
"""meshfs-inspect on files made by the original tools, and its command line.

The real files are in $MESHFS_SHARED/testdata/real (README.md there gives
their provenance and says what each one holds); the tool is
$MESHFS_BUILD/meshfs-inspect.  Every number asserted below is either stated
in that README or was counted once from the files' index arrays and pinned
here (marked "pinned").

  * RealMdl: the Leadwerks .mdl files (same chunk format as .gmf).
  * RealDem: the three .dem examples from the DEM README.
  * CommandLine: exit statuses, JSON lines, sibling lookup, foreign and
    corrupt input, with small files this test writes itself.

Exit status 77 (meson's "skipped") when nothing ran.
"""

import hashlib
import json
import os
import struct
import subprocess
import tempfile
import unittest

from common import run_tests

BUILD = os.environ.get("MESHFS_BUILD")
SHARED = os.environ.get("MESHFS_SHARED")
REAL = os.path.join(SHARED, "testdata", "real") if SHARED else None

# From testdata/real/README.md ("SHA-256"): the data must not drift.
SHA256 = {
    "mdl/red_green_tris.mdl": "63a253c885ee766586efc5f40137629d522860f440edc08a33e5e35fe3fe1e39",
    "mdl/plane.mdl": "abaff71b45be06379424f6ea69d98beae9f8cd831dfe16d0b18f5f4f7288f31a",
    "mdl/oildrum.mdl": "a65224ce2a677089c53bac53e716e337bab7d8b0f83fd348a534687ba0a9fe87",
    "mdl/barbarian.mdl": "d43cbacd2df5180ce4561bec3b04a1713d1037c1cf2853407f5da42c99d65368",
    "mdl/ball.mdl": "d35019594cc3e1d2938316e84c4fc696b0cb7e3358bca87f5e50d650a4421c12",
    "mdl/Lifebelt.mdl": "89a20ce887315107f960920542bd5cb60cc0e1d7d2e54d5a989128ba396b890c",
    "mdl/key.mdl": "ef7ab20d50289ef61524404c02564ae96cc07499a66d7010a2cda34a47310485",
    "mdl/crawler.mdl": "86861d9fc4a74c7582e79988b6e9b0eed634ee6ccd65d6c63487239b28bf084c",
    "dem/readme_cube_early.dem": "eca97eb59cb9e99c48501060bbc96126d4a4f32a19e6eaff3ff42f999585c5b9",
    "dem/readme_cube_mid.dem": "eb57983caac692566523287a79e470d11efb17731604682521c955eef3994111",
    "dem/readme_cube_latest.dem": "a9081c5e6edaac5f6d004a4938e57fdc0b3eec72b2ae297d5a9959d92a6628de",
}

# Per .mdl: the README's statements (version, bones, sequences, vertex
# counts, meshes = SURFACE blocks) and pinned triangle counts (INDICEARRAY
# indices / 3, mode GMF_TRIANGLES in every file).  nodes = MESH + NODE + BONE
# blocks; name = the root limb's "name" property.
MDL = {
    "red_green_tris.mdl": dict(version=1, meshes=2, vertices=6, triangles=2, bones=0,
                               nodes=2, animations=0, name="TriangeGreen"),
    "plane.mdl": dict(version=1, meshes=1, vertices=4, triangles=2, bones=1, nodes=2,
                      animations=1, name="SKIN_MESH"),
    "oildrum.mdl": dict(version=1, meshes=1, vertices=272, triangles=256, bones=0, nodes=1,
                        animations=0, name="U3D_MESH"),
    "barbarian.mdl": dict(version=1, meshes=2, vertices=2219, triangles=3074, bones=53,
                          nodes=54, animations=7, name="SKIN_MESH"),
    "ball.mdl": dict(version=2, meshes=1, vertices=323, triangles=528, bones=0, nodes=1,
                     animations=0, name="Sphere001"),
    "Lifebelt.mdl": dict(version=2, meshes=1, vertices=702, triangles=1248, bones=0, nodes=1,
                         animations=0, name="Mesh_LifebeltshadeP003"),
    "key.mdl": dict(version=2, meshes=1, vertices=451, triangles=284, bones=0, nodes=2,
                    animations=0, name="STATIC_MESH"),
    "crawler.mdl": dict(version=2, meshes=2, vertices=3070, triangles=4036, bones=24, nodes=25,
                        animations=5, name="U3D_MESH"),
}
CRAWLER_SEQUENCES = ["Idle", "Run", "Attack1", "Death", "Attack2"]
# v1 stores the colour arrays of these two mislabeled (README: "float x3").
MISLABELED_COLOR = {"oildrum.mdl": 1, "barbarian.mdl": 2}

TOL = 1e-4


def tool():
    return os.path.join(BUILD, "meshfs-inspect") if BUILD else None


def tool_missing():
    if not BUILD:
        return "MESHFS_BUILD is not set (point it at a meson build dir)"
    if not os.access(tool(), os.X_OK):
        return "%s not built" % tool()
    r = subprocess.run([tool(), "--help"], capture_output=True, timeout=30, check=False)
    if r.returncode != 0:
        return "%s --help exits %d: not written yet" % (tool(), r.returncode)
    return None


def real_missing():
    if not REAL or not os.path.isdir(REAL):
        return "MESHFS_SHARED/testdata/real not found (%s)" % REAL
    return None


def run(*args):
    return subprocess.run([tool(), *args], capture_output=True, text=True, timeout=120,
                          check=False)


def inspect(paths, check=False):
    """(exit status, [one JSON object per file]), asserting one line per file."""
    r = run("--json", *(["--check"] if check else []), *paths)
    lines = [l for l in r.stdout.split("\n") if l]
    rows = [json.loads(l) for l in lines]
    if len(rows) != len(paths):
        raise AssertionError("%d JSON lines for %d files:\n%s%s"
                             % (len(rows), len(paths), r.stdout, r.stderr))
    for path, row in zip(paths, rows):
        if row["file"] != path:
            raise AssertionError("row for %s names %s" % (path, row["file"]))
    return r.returncode, rows


def real(rel):
    return os.path.join(REAL, rel)


class RealData(unittest.TestCase):
    def setUp(self):
        why = tool_missing() or real_missing()
        if why:
            self.skipTest(why)


class RealMdl(RealData):
    def test_files_are_the_documented_ones(self):
        for rel, digest in SHA256.items():
            with self.subTest(file=rel), open(real(rel), "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), digest)

    def test_counts(self):
        paths = [real("mdl/" + n) for n in MDL]
        rc, rows = inspect(paths, check=True)
        self.assertEqual(rc, 0, [r["error"] for r in rows])
        for name, row in zip(MDL, rows):
            with self.subTest(file=name):
                self.assertTrue(row["ok"], row["error"])
                self.assertIsNone(row["error"])
                self.assertEqual(row["format"], "gmf")
                self.assertEqual(row["violations"], 0)
                for key, want in MDL[name].items():
                    self.assertEqual(row[key], want, key)

    def test_animation_names(self):
        _, (crawler, barbarian, plane) = inspect(
            [real("mdl/crawler.mdl"), real("mdl/barbarian.mdl"), real("mdl/plane.mdl")])
        self.assertEqual(crawler["animation_names"], CRAWLER_SEQUENCES)
        # version 1 stores no names: 7 sequences, no names
        self.assertEqual(barbarian["animations"], 7)
        self.assertEqual(barbarian["animation_names"], [])
        self.assertEqual(plane["animation_names"], [])

    def test_tolerated_oddities_are_warnings(self):
        names = sorted(MDL)
        _, rows = inspect([real("mdl/" + n) for n in names], check=True)
        for name, row in zip(names, rows):
            with self.subTest(file=name):
                mis = [w for w in row["warnings"] if "COLOR arrays are labelled" in w]
                if name in MISLABELED_COLOR:
                    self.assertEqual(len(mis), 1, row["warnings"])
                    self.assertTrue(mis[0].startswith("%d COLOR" % MISLABELED_COLOR[name]),
                                    mis[0])
                else:
                    self.assertEqual(mis, [])
                self.assertEqual(row["warnings_total"], len(row["warnings"]))

    def test_bounds(self):
        _, (crawler, ball, plane) = inspect(
            [real("mdl/crawler.mdl"), real("mdl/ball.mdl"), real("mdl/plane.mdl")])
        # research/gmf.md: "the crawler stands 0-1.55 in Y"
        self.assertAlmostEqual(crawler["min"][1], -0.0180991, places=5)
        self.assertAlmostEqual(crawler["max"][1], 1.5468946, places=5)
        for axis in range(3):
            self.assertAlmostEqual(ball["min"][axis], -0.5, places=5)
            self.assertAlmostEqual(ball["max"][axis], 0.5, places=5)
        # an up-facing XZ quad, side 1
        self.assertEqual([round(v, 5) for v in plane["min"]], [-0.5, 0.0, -0.5])
        self.assertEqual([round(v, 5) for v in plane["max"]], [0.5, 0.0, 0.5])
        # left-handed: the canonical box negates z
        for row in (crawler, ball, plane):
            self.assertEqual(row["cmin"], [row["min"][0], row["min"][1], -row["max"][2]])
            self.assertEqual(row["cmax"], [row["max"][0], row["max"][1], -row["min"][2]])


class RealDem(RealData):
    FILES = ["dem/readme_cube_latest.dem", "dem/readme_cube_mid.dem",
             "dem/readme_cube_early.dem"]
    # --check applies the author's loader's rules (research/dem_vrt.md,
    # "measured"; docs/formats/dem.md, "Loader rules").  The loader knows
    # only the header `DEM 10` (a first token `DEM_10` is an unknown keyword
    # it skips, leaving the version unset) and reads four fields of every
    # `t` line (a 3-int line indexes past its tokens).  The mid and early
    # files are the README's DEM_10 form with 3-int t lines, so that loader
    # cannot read them: they still read here, and fail --check.
    HEADER = ("line 1: header 'DEM_10' is the older form of 'DEM 10', which the loader does "
              "not recognise (it reads only 'DEM 10')")
    TRI3 = ("line 15: 't' line without a polygon index (the early exporter's form; the "
            "loader reads fields 1 to 4)")
    TRI3_TOTAL = "12 lines in all with 't' lines without a polygon index (first: line 15)"

    def test_latest(self):
        rc, (latest,) = inspect([real(self.FILES[0])], check=True)
        self.assertEqual(rc, 0)
        self.assertTrue(latest["ok"], latest["error"])
        self.assertEqual(latest["format"], "dem")
        self.assertEqual(latest["version"], 10)
        self.assertEqual((latest["meshes"], latest["vertices"], latest["triangles"]), (1, 8, 12))
        self.assertEqual(latest["min"], [-1, -1, -1])
        self.assertEqual(latest["max"], [1, 1, 1])
        self.assertEqual(latest["name"], "box")
        self.assertEqual(latest["warnings"], [])
        self.assertEqual(latest["violations"], 0)

    def test_mid_reads_but_fails_loader_rules(self):
        path = real(self.FILES[1])
        rc, (mid,) = inspect([path])
        self.assertEqual(rc, 0)
        self.assertTrue(mid["ok"], mid["error"])
        self.assertEqual((mid["meshes"], mid["vertices"], mid["triangles"]), (1, 8, 12))
        self.assertEqual(mid["min"], [-1, -1, -1])
        self.assertEqual(mid["max"], [1, 1, 1])
        self.assertEqual(mid["name"], "")
        self.assertEqual(mid["warnings"], [self.HEADER, self.TRI3, self.TRI3_TOTAL])
        self.assertEqual(mid["violations"], 2)
        rc, (mid,) = inspect([path], check=True)
        self.assertEqual(rc, 1)
        self.assertFalse(mid["ok"])
        self.assertEqual(mid["error"], "%s: %s (and 1 more check failures)" % (path, self.HEADER))
        self.assertEqual(mid["triangles"], 12)

    def test_early_count_mismatch(self):
        path = real(self.FILES[2])
        mismatch = "mesh 'Cube': tris declares 6 but 12 't' lines follow (line 14)"
        rc, (row,) = inspect([path])
        self.assertEqual(rc, 0)
        self.assertTrue(row["ok"])
        self.assertEqual(row["triangles"], 12)  # the lines, not the count
        self.assertEqual(row["vertices"], 8)
        self.assertEqual(row["warnings"], [self.HEADER, self.TRI3, mismatch, self.TRI3_TOTAL])
        self.assertEqual(row["violations"], 3)
        rc, (row,) = inspect([path], check=True)
        self.assertEqual(rc, 1)
        self.assertFalse(row["ok"])
        self.assertEqual(row["error"], "%s: %s (and 2 more check failures)" % (path, self.HEADER))
        self.assertEqual(row["triangles"], 12)


class CommandLine(unittest.TestCase):
    def setUp(self):
        why = tool_missing()
        if why:
            self.skipTest(why)
        self.tmp = tempfile.TemporaryDirectory(prefix="meshfs-inspect-")
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, data):
        path = os.path.join(self.tmp.name, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    @staticmethod
    def runtime(values, fmt):
        return struct.pack("<3i", 4 * len(values), 4, len(values)) + struct.pack(
            "<%d%s" % (len(values), fmt), *values)

    def cube_files(self, stem, last_index=2):
        # 3 of the engine's 64-byte vertices (x y z u v nx ny nz, weights
        # w0..w3, bone indices b0..b3; static: all zero), one triangle, and
        # the 48-byte BoundingSphere around them (16 zero bytes, centre
        # x y z w at 16, radius at 32, 12 zero bytes)
        skin = struct.pack("<4f4I", 0, 0, 0, 0, 0, 0, 0, 0)
        verts = [(0, 0, 0, 0, 0, 0, 0, 1), (2, 0, 0, 1, 0, 0, 0, 1), (0, 2, 0, 0, 1, 0, 0, 1)]
        body = b"".join(struct.pack("<8f", *v) + skin for v in verts)
        vrt = struct.pack("<3i", len(body), 4, len(body) // 4) + body
        tri = self.runtime([0, 1, last_index], "I")
        sph = bytes(16) + struct.pack("<5f", 1, 1, 0, 1, 1.5) + bytes(12)
        return (self.write(stem + ".vrt", vrt), self.write(stem + ".tri", tri),
                self.write(stem + ".sph", sph))

    def test_usage(self):
        r = run()
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage: meshfs-inspect", r.stderr)
        r = run("--frobnicate", "x.gmf")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown option '--frobnicate'", r.stderr)
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--check", r.stdout)
        for ext in (".gmf/.mdl", ".tex", "(.lgepkg)", "(.lge)"):
            self.assertIn(ext, r.stdout)
        r = run("--version")
        self.assertEqual(r.returncode, 0)
        # the version first, then what its bytes depend on (issue 32 item 4)
        self.assertRegex(r.stdout, r"^meshfs-inspect \d+\.\d+\.\d+\n")

    def test_siblings(self):
        vrt, tri, sph = self.cube_files("x")
        rc, rows = inspect([vrt, tri, sph], check=True)
        self.assertEqual(rc, 0, rows)
        self.assertEqual([r["format"] for r in rows], ["vrt", "tri", "sph"])
        self.assertEqual((rows[0]["vertices"], rows[1]["triangles"]), (3, 1))
        self.assertEqual(rows[1]["sibling"], vrt)
        self.assertEqual(rows[2]["sibling"], vrt)
        self.assertEqual(rows[2]["sphere"], {"center": [1, 1, 0], "radius": 1.5})
        self.assertIsNone(rows[0]["sibling"])
        with open(tri, "rb") as f:
            lone = self.write("lone.tri", f.read())
        rc, (row,) = inspect([lone], check=True)
        self.assertEqual(rc, 0)
        self.assertIsNone(row["sibling"])
        self.assertEqual(row["warnings"],
                         ["sibling lone.vrt is missing: indices not checked against vertices"])

    def test_check_failures_exit_1(self):
        _, tri, _ = self.cube_files("bad", last_index=3)
        rc, (row,) = inspect([tri])
        self.assertEqual(rc, 0)
        self.assertTrue(row["ok"])
        self.assertEqual(row["violations"], 1)
        rc, (row,) = inspect([tri], check=True)
        self.assertEqual(rc, 1)
        self.assertEqual(row["error"], "%s: 1 indices out of range (first: index 2 = 3; bad.vrt "
                                       "has 3 vertices)" % tri)
        # text mode: the summary on stdout, the error on stderr
        r = run("--check", tri)
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stdout.startswith("%s: tri\n" % tri), r.stdout)
        self.assertEqual(r.stderr, "meshfs-inspect: %s\n" % row["error"])

    def test_corrupt_and_foreign_input(self):
        gmf = self.write("cut.gmf", struct.pack("<4i", 1, 1, 4, 1) + struct.pack("<3i", 3, 0, 64))
        empty = self.write("empty.fmd", b"")
        foreign = self.write("blob.bin", b"\x00" * 40)
        missing = os.path.join(self.tmp.name, "nothing.dem")
        rc, rows = inspect([gmf, empty, foreign, missing])
        self.assertEqual(rc, 1)
        self.assertEqual([r["ok"] for r in rows], [False] * 4)
        self.assertEqual(rows[0]["error"], "%s: offset 16: MESH declares a payload of 64 bytes "
                                           "but only 0 remain" % gmf)
        self.assertEqual(rows[1]["error"], "%s: file is 0 bytes, shorter than the 6-byte magic "
                                           "FMD001" % empty)
        self.assertIn("unknown format", rows[2]["error"])
        self.assertIsNone(rows[2]["format"])
        self.assertEqual(rows[3]["error"], "%s: cannot open: No such file or directory" % missing)

    def test_fifo_is_refused_not_waited_on(self):
        # opening a FIFO for reading blocked until a writer came: forever
        fifo = os.path.join(self.tmp.name, "pipe.gmf")
        os.mkfifo(fifo)
        r = run(fifo)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "meshfs-inspect: %s: not a regular file\n" % fifo)
        # nor a FIFO in the place of a .tri's sibling .vrt
        _, tri, _ = self.cube_files("x")
        os.unlink(os.path.join(self.tmp.name, "x.vrt"))
        os.mkfifo(os.path.join(self.tmp.name, "x.vrt"))
        rc, (row,) = inspect([tri])
        self.assertEqual(rc, 0)
        self.assertIn("sibling x.vrt unreadable (not a regular file): not checked against it",
                      row["warnings"])

    def test_lge_chunks_read_but_hold_no_model(self):
        # MetaAppender's samples: the chunk (old 20-byte-name layout) reads,
        # but the payloads are its test bytes, so the payload's own reader
        # fails them under --check (docs/formats/lgepkg.md).  cube.mesh has
        # no reader.
        why = real_missing()
        if why:
            self.skipTest(why)
        names = {"aa.lge": ("p1_verts", "p1_verts.vrt"), "bb.lge": ("p1_norms", "p1_norms.tri"),
                 "cc.lge": ("p1_anim", "p1_anim.tex")}
        paths = [real("lge/" + n) for n in sorted(names)]
        rc, rows = inspect(paths)
        self.assertEqual(rc, 0, [r["error"] for r in rows])
        for path, row in zip(paths, rows):
            self.assertEqual((row["format"], row["name"]), ("lge", names[os.path.basename(path)][0]))
            self.assertTrue(any(w.startswith("old MetaAppender layout") for w in row["warnings"]))
        rc, rows = inspect(paths, check=True)
        self.assertEqual(rc, 1)
        for path, row in zip(paths, rows):
            self.assertIn(": payload: %s: " % names[os.path.basename(path)][1], row["error"])
        rc, rows = inspect([real("lge/cube.mesh")])
        self.assertEqual(rc, 1)
        self.assertIn("unknown format", rows[0]["error"])

    def test_truncated_real_file(self):
        why = real_missing()
        if why:
            self.skipTest(why)
        with open(real("mdl/crawler.mdl"), "rb") as f:
            data = f.read()
        for cut in (100, 1000, len(data) // 2, len(data) - 1):
            with self.subTest(cut=cut):
                path = self.write("crawler_%d.mdl" % cut, data[:cut])
                rc, (row,) = inspect([path])
                self.assertEqual(rc, 1)
                self.assertRegex(row["error"], r"^%s: offset \d+: " % path)
        # one good file and one bad: both reported, exit 1
        good, bad = real("mdl/plane.mdl"), os.path.join(self.tmp.name, "crawler_100.mdl")
        rc, rows = inspect([good, bad])
        self.assertEqual((rc, rows[0]["ok"], rows[1]["ok"]), (1, True, False))


if __name__ == "__main__":
    run_tests()
