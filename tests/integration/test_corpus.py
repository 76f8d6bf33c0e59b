"""Every model of Debian's assimp-testmodels that assimp imports converts to
every format; every output passes meshfs-inspect --check; triangle counts and
bounding boxes agree with the import; skinned models keep their bones,
weights and animations where the format carries them.

Run directly with --write-doc to regenerate docs/corpus.md from a run."""
import json
import os
import subprocess
import sys
import unittest
from concurrent.futures import ThreadPoolExecutor

from common import CORPUS, FORMATS, SOURCE, convert, inspect, tempdir, tool

# Models assimp reads but meshfs refuses on purpose, with the reason it gives.
REFUSED = {
    "glTF2/BoxWithInfinites-glTF-Binary/BoxWithInfinites.glb": "is not finite",
}
SKINNED = ["FBX/animation_with_skeleton.fbx", "X/Testwuson.X", "MD5/SimpleCube.md5mesh", "SMD/WusonSMD.smd"]
# The import's count each format's triangles must equal: .gmf, .dem and .tri
# write a mesh at every node that places it (instancing; point and line
# meshes skipped); .fmd does too (placed geometry, FGE draws vertices as
# stored) but keeps points and lines as degenerate triangles
# (docs/formats/*.md).
TRI_FORMATS = {"gmf": "placed_triangles", "dem": "placed_triangles", "tri": "placed_triangles",
               "fmd": "placed_faces"}
# Formats whose reader box is the box of the triangles, placed as their
# engine places them (.gmf: translations only; .dem, .vrt: model space).
# .fmd is placed too, but stores every vertex of a mesh, including those no
# triangle uses (glTF/IncorrectVertexArrays), so its box may be wider than
# the import's triangle box; its placement is checked in test_fmd and
# test_placement.
BOX_FORMATS = ["gmf", "dem", "vrt"]


def bare_import(path):
    p = subprocess.run([tool("bench-import"), path], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return None
    words = p.stdout.split()
    return {"meshes": int(words[1]), "vertices": int(words[3]), "faces": int(words[5])}


class Corpus:
    """One conversion of the whole corpus, shared by the checks."""
    _run = None

    @classmethod
    def get(cls):
        if cls._run is None:
            cls._run = cls()
        return cls._run

    def __init__(self):
        self.tmp = tempdir()
        self.out = self.tmp.name
        p, rows = convert([CORPUS], self.out, "--timeout", "120")
        self.stderr = p.stderr
        self.rows = {r["model"]: r for r in rows}
        with ThreadPoolExecutor(4) as ex:
            paths = sorted(self.rows)
            self.bare = dict(zip(paths, ex.map(lambda m: bare_import(os.path.join(CORPUS, m)), paths)))
        outputs = [o["path"] for r in rows if r["ok"] for o in r["outputs"].values()]
        self.inspected = inspect(outputs, check=True)

    def importable(self):
        """Models assimp imports with at least one face."""
        return sorted(m for m, b in self.bare.items() if b and b["faces"] > 0)


def close(a, b, scale):
    return abs(a - b) <= 1e-3 * scale + 1e-4


class CorpusTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Corpus.get()

    def test_every_importable_model_converts(self):
        c = self.c
        self.assertGreater(len(c.importable()), 250)
        for m in c.importable():
            r = c.rows[m]
            if m in REFUSED:
                self.assertFalse(r["ok"])
                self.assertIn(REFUSED[m], r["error"])
                continue
            self.assertTrue(r["ok"], f"{m}: {r['error']}")
            for f in FORMATS:
                self.assertTrue(r["outputs"][f]["ok"], (m, f, r["outputs"][f]["error"]))

    def test_failures_are_assimp_failures(self):
        """Whatever meshfs fails on, assimp fails on too (or it is refused on purpose)."""
        for m, r in self.c.rows.items():
            if not r["ok"] and m not in REFUSED:
                b = self.c.bare[m]
                self.assertTrue(b is None or b["faces"] == 0, f"{m}: meshfs failed ({r['error']}) "
                                                               f"but assimp imported {b}")
                self.assertTrue(r["error"])

    def test_outputs_pass_inspect_check(self):
        bad = {p: s["error"] for p, s in self.c.inspected.items() if not s["ok"]}
        self.assertEqual(bad, {})
        self.assertGreater(len(self.c.inspected), 250 * len(FORMATS))

    def test_counts_and_boxes_agree_with_import(self):
        c = self.c
        for m, r in c.rows.items():
            if not r["ok"]:
                continue
            ext = max(r["max"][i] - r["min"][i] for i in range(3))
            for f, field in TRI_FORMATS.items():
                s = c.inspected[r["outputs"][f]["path"]]
                self.assertEqual(s["triangles"], r[field], (m, f))
            if r["triangles"] == 0:
                continue
            for f in BOX_FORMATS:
                s = c.inspected[r["outputs"][f]["path"]]
                for i in range(3):
                    self.assertTrue(close(s["cmin"][i], r["min"][i], ext), (m, f, "min", s["cmin"], r["min"]))
                    self.assertTrue(close(s["cmax"][i], r["max"][i], ext), (m, f, "max", s["cmax"], r["max"]))

    def test_skinned_models_keep_bones_and_animations(self):
        c = self.c
        for m in SKINNED:
            r = c.rows[m]
            self.assertTrue(r["ok"], m)
            self.assertGreater(r["bones"], 0, m)
            out = lambda f: c.inspected[r["outputs"][f]["path"]]
            self.assertGreater(out("fmd")["bones"], 0, m)
            self.assertGreater(out("gmf")["bones"], 0, m)
            self.assertGreater(out("dem")["bones"], 0, m)
            # .vrt: its vertices use bones (1 + the highest index in use)
            self.assertGreater(out("vrt")["bones"], 0, m)
            # .fmd carries no animation; .gmf and .dem carry every one
            self.assertEqual(out("gmf")["animations"], r["animations"], m)
            self.assertEqual(out("dem")["animations"], r["animations"], m)
        # at least the FBX, X and SMD samples are animated
        self.assertGreaterEqual(sum(1 for m in SKINNED if c.rows[m]["animations"] > 0), 3)


def write_doc():
    c = Corpus.get()
    rows = c.rows
    imp = c.importable()
    ok = [m for m in rows if rows[m]["ok"]]
    failed = sorted(m for m in rows if not rows[m]["ok"])
    checked = sum(1 for s in c.inspected.values() if s["ok"])
    lines = [
        "# The assimp-testmodels corpus",
        "",
        "Every file under `/usr/share/assimp/models` (Debian's `assimp-testmodels`) whose extension",
        "assimp claims, converted by `meshfs-convert` to all seven formats and every output checked",
        "with `meshfs-inspect --check`. Produced by `python3 tests/integration/test_corpus.py --write-doc`",
        "(the same checks run in `meson test corpus`).",
        "",
        "| | count |",
        "|---|---:|",
        f"| model files tried | {len(rows)} |",
        f"| imported by bare assimp with at least one face | {len(imp)} |",
        f"| converted by meshfs to all {len(FORMATS)} per-model formats | {len(ok)} |",
        f"| output files written | {sum(len(FORMATS) for _ in ok)} |",
        f"| output files passing `meshfs-inspect --check` | {checked} |",
        f"| failed (assimp fails too, has no faces, or refused on purpose) | {len(failed)} |",
        "",
        "Triangle counts of every output, and the canonical bounding box of every .gmf, .dem and",
        ".vrt, agree with the import's, placed as each engine places them (.fmd's box is not",
        "compared: it keeps vertices no triangle uses). Skinned models keep bones, weights and animations where the",
        "format carries them: " + ", ".join(f"`{m}`" for m in SKINNED) + ".",
        "",
        "## Failures, with the reason meshfs gives",
        "",
        "| model | reason |",
        "|---|---|",
    ]
    for m in failed:
        reason = rows[m]["error"].replace("|", "\\|")
        note = " (refused on purpose)" if m in REFUSED else ""
        lines.append(f"| `{m}` | {reason}{note} |")
    path = os.path.join(SOURCE, "docs", "corpus.md")
    # scripts/bench-corpus's section (artist-made models) is its own: kept
    with open(path) as f:
        old = f.read()
    mark = "<!-- bench-corpus:begin -->"
    kept = "\n" + old[old.index(mark):] if mark in old else ""
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n" + kept)
    print(f"wrote {path}")


if __name__ == "__main__":
    if "--write-doc" in sys.argv:
        write_doc()
    else:
        unittest.main()
