"""Names (docs/naming.md), in a real mount and in meshfs-convert on the same
tree: one view name stands for one model, a real file wins over a view,
collisions are reported, -o lowercase_names / --lowercase-names, and FGE's
built-in model names."""
import errno
import os
import unittest

from common import FORMATS, TreeCase, convert, inspect, run, run_tests
from mount import Mount


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


# Tiny valid models with different triangle counts, so a view's triangle
# count says which model it was made from.
def obj(ntri):
    """ntri separate triangles in a row along x."""
    v, f = [], []
    for t in range(ntri):
        v += [f"v {t} 0 0", f"v {t + 1} 0 0", f"v {t} 1 0"]
        f.append(f"f {3 * t + 1} {3 * t + 2} {3 * t + 3}")
    return "\n".join(v + f) + "\n"


def ply(ntri):
    verts = "".join(f"{t} 0 0\n{t + 1} 0 0\n{t} 1 0\n" for t in range(ntri))
    faces = "".join(f"3 {3 * t} {3 * t + 1} {3 * t + 2}\n" for t in range(ntri))
    return ("ply\nformat ascii 1.0\n"
            f"element vertex {3 * ntri}\nproperty float x\nproperty float y\nproperty float z\n"
            f"element face {ntri}\nproperty list uchar int vertex_indices\nend_header\n"
            + verts + faces)


def stl(ntri):
    facets = "".join(f"facet normal 0 0 1\n outer loop\n  vertex {t} 0 0\n  vertex {t + 1} 0 0\n"
                     f"  vertex {t} 1 0\n endloop\nendfacet\n" for t in range(ntri))
    return "solid s\n" + facets + "endsolid s\n"


def files_under(root):
    """Sorted relative paths of the files under root (hidden ones skipped)."""
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".")]
        out += [os.path.relpath(os.path.join(d, f), root) for f in files if not f.startswith(".")]
    return sorted(out)


def is_view(name):
    return name.rsplit(".", 1)[-1] in FORMATS


class NamingTest(TreeCase):
    def setUp(self):
        super().setUp()
        self.out = os.path.join(self.tmp, "out")


    # The per-model views only: the per-folder package (lgepkg) is another
    # test's business.
    def mount(self, *opts):
        return Mount(self.src, self.mnt, self.cache, "formats=" + ":".join(FORMATS), *opts)

    def convert(self, *opts):
        return convert([self.src], self.out, "-f", ",".join(FORMATS), *opts)

    def triangles(self, paths):
        return {os.path.basename(p): r["triangles"] for p, r in inspect(paths).items()}

    def test_one_name_one_model(self):
        d = os.path.join(self.src, "m")
        write(os.path.join(d, "a.obj"), obj(1))
        write(os.path.join(d, "a.ply"), ply(2))
        write(os.path.join(d, "a.obj.stl"), stl(3))
        write(os.path.join(d, "b.obj"), obj(4))
        write(os.path.join(d, "b.fmd"), b"a real file named like b.obj's short view")
        write(os.path.join(d, "readme.txt"), "hello\n")
        p, rows = self.convert()
        self.assertEqual(p.returncode, 0, p.stderr)
        expected_views = sorted(f"m/{base}.{f}" for base in ("a.obj", "a.ply", "a.obj.stl", "b.obj")
                                for f in FORMATS)
        self.assertEqual(files_under(self.out), expected_views)
        # every view name stands for the model it claims (triangle counts 1..4)
        gmf = self.triangles(os.path.join(self.out, "m", f"{b}.gmf") for b in ("a.obj", "a.ply", "a.obj.stl", "b.obj"))
        self.assertEqual(gmf, {"a.obj.gmf": 1, "a.ply.gmf": 2, "a.obj.stl.gmf": 3, "b.obj.gmf": 4})
        # the report: the outputs' paths follow the names; the collisions are noted
        by = {r["model"]: r for r in rows}
        self.assertEqual(sorted(by), ["m/a.obj", "m/a.obj.stl", "m/a.ply", "m/b.obj"])
        for model, base in (("m/a.obj", "a.obj"), ("m/a.ply", "a.ply"), ("m/a.obj.stl", "a.obj.stl")):
            self.assertEqual(by[model]["outputs"]["gmf"]["path"], os.path.join(self.out, "m", base + ".gmf"))
        self.assertIn("'a' is also the view base of 'a.ply'", " ".join(by["m/a.obj"]["warnings"]))
        self.assertIn("'a.obj' is also the view base of 'a.obj'", " ".join(by["m/a.obj.stl"]["warnings"]))
        self.assertIn("'b.fmd' is a real file", " ".join(by["m/b.obj"]["warnings"]))
        self.assertIn("warning: " + d + ": views of 'a.obj' are named 'a.obj.<fmt>', not 'a.<fmt>'", p.stderr)

        with self.mount() as m:
            names = sorted(os.listdir(os.path.join(self.mnt, "m")))
            real = ["a.obj", "a.obj.stl", "a.ply", "b.fmd", "b.obj", "readme.txt"]
            self.assertEqual(sorted(n for n in names if n not in real), [os.path.basename(v) for v in expected_views])
            self.assertEqual(len(names), len(set(names)))
            # same names, same bytes as meshfs-convert
            for v in expected_views:
                self.assertEqual(read(os.path.join(self.mnt, v)), read(os.path.join(self.out, v)), v)
            # the real file wins over b.obj's short view name
            self.assertEqual(read(os.path.join(self.mnt, "m", "b.fmd")),
                             b"a real file named like b.obj's short view")
            log = m.output()
            self.assertIn("m: views of 'a.obj' are named 'a.obj.<fmt>', not 'a.<fmt>': "
                          "'a' is also the view base of 'a.ply'", log)
            self.assertIn("m: views of 'a.obj.stl' are named 'a.obj.stl.<fmt>'", log)
            self.assertIn("m: views of 'b.obj' are named 'b.obj.<fmt>', not 'b.<fmt>': 'b.fmd' is a real file", log)
            self.assertTrue(m.alive())

    def test_long_name_taken_by_real_file(self):
        d = os.path.join(self.src, "m")
        write(os.path.join(d, "c.obj"), obj(1))
        write(os.path.join(d, "c.fmd"), b"real c.fmd")
        write(os.path.join(d, "c.obj.gmf"), b"real c.obj.gmf")
        write(os.path.join(d, "e.obj"), obj(2))
        p, rows = self.convert()
        self.assertEqual(p.returncode, 1, p.stderr)  # c.obj could not be converted
        by = {r["model"]: r for r in rows}
        self.assertFalse(by["m/c.obj"]["ok"])
        self.assertEqual(by["m/c.obj"]["error"],
                         "not converted: 'c.obj' gets no views: 'c.obj.gmf' is a real file (a real file always wins)")
        self.assertTrue(by["m/e.obj"]["ok"])
        self.assertEqual(files_under(self.out), sorted(f"m/e.{f}" for f in FORMATS))
        with self.mount() as m:
            names = sorted(os.listdir(os.path.join(self.mnt, "m")))
            self.assertEqual(names, sorted(["c.fmd", "c.obj", "c.obj.gmf", "e.obj"] + [f"e.{f}" for f in FORMATS]))
            self.assertEqual(read(os.path.join(self.mnt, "m", "c.obj.gmf")), b"real c.obj.gmf")
            self.assertFalse(os.path.exists(os.path.join(self.mnt, "m", "c.obj.fmd")))
            self.assertIn("m: 'c.obj' gets no views: 'c.obj.gmf' is a real file", m.output())

    def test_view_names_longer_than_name_max(self):
        # 255 bytes: its short views are 255 bytes, allowed
        fits = "x" * 251 + ".obj"
        # 254 bytes each, same stem: the clash moves both to the long form,
        # whose views would be 258 bytes
        clash = ["y" * 250 + ".obj", "y" * 250 + ".stl"]
        write(os.path.join(self.src, fits), obj(1))
        write(os.path.join(self.src, clash[0]), obj(2))
        write(os.path.join(self.src, clash[1]), stl(3))
        views = sorted(f"{'x' * 251}.{f}" for f in FORMATS)
        with self.mount() as m:
            # cold, before any listing: every view listed later answers
            for v in views:
                self.assertGreater(os.stat(os.path.join(self.mnt, v)).st_size, 0, v[-8:])
            names = os.listdir(self.mnt)
            self.assertEqual(sorted(n for n in names if len(n.encode()) > 255), [])
            self.assertEqual(sorted(names), sorted([fits] + clash + views))
            for model in clash:
                self.assertIn(f".: '{model}' gets no views: its view names ('{model}.<fmt>') "
                              "would be longer than 255 bytes", m.output())
            # a copy of the mount takes every name it lists
            p = run(["cp", "-a", self.mnt + "/.", os.path.join(self.tmp, "copy")])
            self.assertEqual((p.returncode, p.stderr), (0, ""))
            self.assertTrue(m.alive())
        p, rows = self.convert()
        self.assertEqual(p.returncode, 1, p.stderr)
        by = {r["model"]: r for r in rows}
        self.assertTrue(by[fits]["ok"])
        for model in clash:
            # (the report's error is cut at its length limit)
            self.assertTrue(by[model]["error"].startswith(
                f"not converted: '{model}' gets no views: its view names ('y"), by[model]["error"])
        self.assertEqual(files_under(self.out), views)

    def test_hard_links_to_one_model_have_views_of_their_own(self):
        write(os.path.join(self.src, "a", "m.obj"), obj(2))
        os.link(os.path.join(self.src, "a", "m.obj"), os.path.join(self.src, "a", "n.obj"))
        os.makedirs(os.path.join(self.src, "b"))
        os.link(os.path.join(self.src, "a", "m.obj"), os.path.join(self.src, "b", "m.obj"))
        views = ["a/m", "a/n", "b/m"]
        with self.mount() as m:
            for f in FORMATS:
                inos = {}
                for v in views:
                    p = os.path.join(self.mnt, v + "." + f)
                    with open(p, "rb") as fh:
                        inos[v] = (os.stat(p).st_ino, os.fstat(fh.fileno()).st_ino)
                    listed = {e.name: e.inode() for e in os.scandir(os.path.dirname(p))}
                    self.assertEqual(listed[os.path.basename(p)], inos[v][0], p)
                    self.assertEqual(inos[v][0], inos[v][1], p)
                self.assertEqual(len({i for i, _ in inos.values()}), 3, (f, inos))
            # different files to every tool that compares inode numbers
            for x, y in (("a/m", "a/n"), ("a/m", "b/m")):
                p = run(["diff", os.path.join(self.mnt, x + ".fmi"), os.path.join(self.mnt, y + ".fmi")])
                self.assertEqual(p.returncode, 1, p.stdout)
                self.assertIn(f"model={y}", p.stdout)
            self.assertTrue(m.alive())

    def test_lowercase_names(self):
        write(os.path.join(self.src, "Props", "Crate.OBJ"), obj(2))
        write(os.path.join(self.src, "Props", "Notes.TXT"), "notes\n")
        write(os.path.join(self.src, "props", "x.obj"), obj(1))
        png = b"\x89PNG\r\n\x1a\nnot really"
        write(os.path.join(self.src, "Tex", "Wood.PNG"), png)
        os.symlink("Wood.PNG", os.path.join(self.src, "Tex", "Link.PNG"))
        p, rows = self.convert("--lowercase-names")
        self.assertEqual(p.returncode, 0, p.stderr)
        want = sorted(f"props/crate.{f}" for f in FORMATS)
        self.assertEqual(files_under(self.out), want)
        lost = os.path.join(self.src, "props")
        self.assertIn(f"warning: {self.src}: 'props' is not shown: 'Props' is shown as 'props' (byte order wins)",
                      p.stderr)
        self.assertIn({"warning": "'props' is not shown: 'Props' is shown as 'props' (byte order wins)",
                       "path": lost}, rows)
        # the .fmi names the .fmd by its lowercase path, the .dem by its name
        self.assertIn(b"model=props/crate\n", read(os.path.join(self.out, "props", "crate.fmi")))
        self.assertTrue(read(os.path.join(self.out, "props", "crate.dem")).startswith(b"DEM 10\nmodel crate\n"))

        with self.mount("lowercase_names") as m:
            self.assertEqual(sorted(os.listdir(self.mnt)), ["props", "tex"])
            listing = []
            for d, dirs, files in os.walk(self.mnt):
                listing += [os.path.relpath(os.path.join(d, x), self.mnt) for x in dirs + files]
            for name in listing:
                self.assertEqual(name, name.lower(), name)
            self.assertEqual(sorted(os.listdir(os.path.join(self.mnt, "props"))),
                             sorted(["crate.obj", "notes.txt"] + [f"crate.{f}" for f in FORMATS]))
            # the shown path reaches the real file; the real one is not shown
            self.assertEqual(read(os.path.join(self.mnt, "tex", "wood.png")), png)
            self.assertEqual(read(os.path.join(self.mnt, "props", "notes.txt")), b"notes\n")
            self.assertEqual(read(os.path.join(self.mnt, "props", "crate.obj")),
                             read(os.path.join(self.src, "Props", "Crate.OBJ")))
            for gone in ("Tex/Wood.PNG", "Tex", "tex/Wood.PNG", "props/x.obj", "props/x.gmf", "Props/crate.gmf"):
                with self.assertRaises(FileNotFoundError, msg=gone):
                    os.stat(os.path.join(self.mnt, gone))
            # a relative link is followed among the shown names
            self.assertEqual(os.readlink(os.path.join(self.mnt, "tex", "link.png")), "wood.png")
            self.assertEqual(read(os.path.join(self.mnt, "tex", "link.png")), png)
            # the same views, byte for byte, as meshfs-convert --lowercase-names
            views = sorted(x for x in files_under(self.mnt) if is_view(x))
            self.assertEqual(views, want)
            for v in views:
                run(["cmp", os.path.join(self.mnt, v), os.path.join(self.out, v)], check=True)
            self.assertIn(": 'props' is not shown: 'Props' is shown as 'props' (byte order wins)", m.output())
            self.assertTrue(m.alive())

    def test_builtin_model_names(self):
        write(os.path.join(self.src, "cube.obj"), obj(1))
        write(os.path.join(self.src, "crate.obj"), obj(2))
        p, rows = self.convert()
        self.assertEqual(p.returncode, 0, p.stderr)
        text = ("view name 'cube' is an FGE built-in model name (cube, cylinder, sphere, clear): "
                "FGE draws its own shape and never loads this file; rename the model")
        self.assertIn(f"warning: {self.src}: 'cube.obj': {text}", p.stderr)
        self.assertNotIn("crate.obj", p.stderr)
        by = {r["model"]: r for r in rows}
        self.assertEqual(by["cube.obj"]["warnings"], [f"'cube.obj': {text}"])
        self.assertEqual(by["crate.obj"]["warnings"], [])
        self.assertEqual(sorted(files_under(self.out)), sorted(f"{b}.{f}" for b in ("crate", "cube") for f in FORMATS))
        with self.mount() as m:
            for f in FORMATS:
                v = os.path.join(self.mnt, f"cube.{f}")
                self.assertEqual(os.getxattr(v, "user.meshfs.warning").decode(), text, f)
                self.assertNotIn("user.meshfs.warning", os.listxattr(v))  # read by name only (cp -a)
                # a warning, not a failure: the view still has its bytes
                self.assertEqual(read(v), read(os.path.join(self.out, f"cube.{f}")), f)
                with self.assertRaises(OSError) as cm:
                    os.getxattr(v, "user.meshfs.error")
                self.assertEqual(cm.exception.errno, errno.ENODATA)
                with self.assertRaises(OSError) as cm:
                    os.getxattr(os.path.join(self.mnt, f"crate.{f}"), "user.meshfs.warning")
                self.assertEqual(cm.exception.errno, errno.ENODATA)
            with self.assertRaises(OSError) as cm:  # the model itself is a real file
                os.getxattr(os.path.join(self.mnt, "cube.obj"), "user.meshfs.warning")
            self.assertEqual(cm.exception.errno, errno.ENODATA)
            self.assertIn(f"meshfs: warning: .: 'cube.obj': {text}", m.output())


class DeepPathTest(TreeCase):
    """A model whose path under SRC is longer than a path can be (4,096
    bytes), in a folder whose own path is not: the model's views cannot be
    named, but the folder's package can, and resolving the package reaches
    the model."""

    DEPTH, WIDTH = 16, 240  # the folder: 3,855 bytes under SRC

    def _walk(self, root):
        """A descriptor on root's deep folder, opened a component at a time
        (its whole path is too long for one system call)."""
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        for i in range(self.DEPTH):
            name = f"{i:02d}" + "d" * (self.WIDTH - 2)
            try:
                nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            finally:
                os.close(fd)
            fd = nfd
        return fd

    def test_a_model_path_too_long_for_its_views(self):
        os.makedirs(self.src)
        fd = os.open(self.src, os.O_RDONLY | os.O_DIRECTORY)
        for i in range(self.DEPTH):
            name = f"{i:02d}" + "d" * (self.WIDTH - 2)
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        model = "m" * 246 + ".obj"  # folder + "/" + model: 4,106 bytes
        with open(os.open(model, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write(obj(2))
        os.close(fd)
        write(os.path.join(self.src, "ok.obj"), obj(3))
        with Mount(self.src, self.mnt, self.cache) as m:
            ok = read(os.path.join(self.mnt, "ok.vrt"))
            stdin = os.readlink(f"/proc/{m.proc.pid}/fd/0")
            deep = self._walk(self.mnt)
            try:
                names = os.listdir(deep)
                self.assertIn(model, names)
                self.assertIn("game_resources.lgepkg", names)
                # the views' names are too long to look up
                with self.assertRaises(OSError) as cm:
                    os.stat(model[:-4] + ".vrt", dir_fd=deep)
                self.assertEqual(cm.exception.errno, errno.ENAMETOOLONG)
                # the package: resolving it once closed descriptor 0 of the
                # daemon four times over (a hit left with descriptor 0)
                for _ in range(3):
                    try:
                        os.stat("game_resources.lgepkg", dir_fd=deep)
                    except OSError as e:
                        # EIO while the failure is being found; ENOENT once
                        # it is known that no model of the folder converted
                        self.assertIn(e.errno, (errno.EIO, errno.ENOENT))
            finally:
                os.close(deep)
            self.assertEqual(os.readlink(f"/proc/{m.proc.pid}/fd/0"), stdin)
            self.assertEqual(read(os.path.join(self.mnt, "ok.vrt")), ok)
            self.assertTrue(m.alive())


if __name__ == "__main__":
    run_tests()
