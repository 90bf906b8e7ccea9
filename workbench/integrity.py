"""Artifact folders: every file listed with its sha256, checked before anything is read.

Both artifact kinds (``wb.compile(...).save`` / ``wb.load``, and the tuner's
``export_artifact`` / ``load_artifact``) write a ``manifest.json`` whose ``"files"`` maps
each file of the folder (a path relative to it, ``/``-separated) to its sha256, and whose
``"manifest_sha256"`` is the sha256 of the rest of the manifest (canonical JSON), so that an
edit of the manifest itself is caught too.

``verify_folder`` refuses, with ``ArtifactIntegrityError`` naming the file, before any other
file is read:

* a manifest that is not JSON, has no file list, or whose own digest does not match;
* a listed file that is missing, not a regular file, or whose content has another digest;
* a file (or folder) in the folder that the manifest does not list, and any symlink;
* a listed path that is absolute, has ``..`` or ``.`` parts, or otherwise leaves the folder.

``VerifiedFolder.read`` hashes the bytes it returns again (a file swapped after the check is
refused too); loaders parse those bytes, never the path.

What this protects and what it does not (the threat model, also in docs/decisions.md): an
artifact is code, like a wheel, so verify where it came from. The hashes catch corruption
and the tampering of single files; someone who rewrites the whole folder can also rewrite
the hashes. What keeps a loaded artifact from running foreign code is that loading never
imports or unpickles anything from the folder: the kernels are generated again from the
artifact's data (function text, trace, target options) by workbench itself, and must equal
the stored sources.

Example
-------
>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "data.txt").write_text("hello")
>>> write_manifest(folder, {"format": "example"})
>>> verify_folder(folder, "example").read("data.txt")
b'hello'
>>> _ = (folder / "data.txt").write_text("HELLO")
>>> verify_folder(folder, "example")  # doctest: +ELLIPSIS +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
...
workbench.integrity.ArtifactIntegrityError: ... data.txt: its content changed (sha256 ...
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path, PurePosixPath

MANIFEST = "manifest.json"


class ArtifactIntegrityError(ValueError):
    """An artifact folder whose files do not match its manifest, or whose kernels do not
    match what workbench generates from it: nothing of it was imported or run.

    Attributes
    ----------
    folder : str
        The artifact folder.
    name : str
        The file (relative to the folder) or kernel at fault.
    reason : str
        What is wrong with it.
    """

    def __init__(self, folder, name: str, reason: str):
        self.folder, self.name, self.reason = str(folder), name, reason
        super().__init__(f"artifact {self.folder}: {name}: {reason} (nothing was loaded; "
                         "re-export the artifact from its source, see docs/decisions.md)")

    def __reduce__(self):
        return type(self), (self.folder, self.name, self.reason)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canonical(manifest: dict) -> bytes:
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _walk(folder: Path) -> list[str]:
    """Every regular file under ``folder`` as a relative posix path; anything else refused."""
    found = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            path = Path(root, name)
            rel = path.relative_to(folder).as_posix()
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise ArtifactIntegrityError(folder, rel, "is a symlink (artifacts hold "
                                             "regular files only)")
            if name in files and not stat.S_ISREG(mode):
                raise ArtifactIntegrityError(folder, rel, "is not a regular file")
            if name in files:
                found.append(rel)
    return found


def write_manifest(folder, manifest: dict) -> None:
    """Write ``manifest`` to ``folder/manifest.json`` with the sha256 of every other file of
    ``folder`` and its own digest (call it last, when every other file is written)."""
    folder = Path(folder)
    files = {rel: sha256_bytes((folder / rel).read_bytes())
             for rel in sorted(_walk(folder)) if rel != MANIFEST}
    manifest = {**manifest, "files": files}
    manifest["manifest_sha256"] = sha256_bytes(_canonical(manifest))
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))


def _safe_relative(folder: Path, rel) -> bool:
    if not isinstance(rel, str) or not rel or "\\" in rel or "\x00" in rel:
        return False
    parts = PurePosixPath(rel).parts
    if PurePosixPath(rel).is_absolute() or any(p in ("..", ".", "") for p in parts):
        return False
    return PurePosixPath(*parts).as_posix() == rel


class VerifiedFolder:
    """An artifact folder whose manifest and files were checked (``verify_folder``)."""

    def __init__(self, folder: Path, manifest: dict):
        self.folder, self.manifest = folder, manifest

    def path(self, rel) -> Path:
        """``folder/rel`` for a file the manifest lists (else ``ArtifactIntegrityError``)."""
        if not _safe_relative(self.folder, rel):
            raise ArtifactIntegrityError(self.folder, str(rel), "the path leaves the folder")
        if rel not in self.manifest["files"]:
            raise ArtifactIntegrityError(self.folder, rel, "is not listed in the manifest")
        return self.folder / rel

    def read(self, rel) -> bytes:
        """The bytes of listed file ``rel``, hashed again as they are read."""
        path = self.path(rel)
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                raise ArtifactIntegrityError(self.folder, rel, "is not a regular file")
            data = path.read_bytes()
        except OSError as error:
            raise ArtifactIntegrityError(self.folder, rel, f"cannot be read ({error})") from None
        if sha256_bytes(data) != self.manifest["files"][rel]:
            raise ArtifactIntegrityError(self.folder, rel, "its content changed (sha256 "
                                         "differs from the manifest's)")
        return data

    def read_text(self, rel) -> str:
        try:
            return self.read(rel).decode("utf-8")
        except UnicodeDecodeError:
            raise ArtifactIntegrityError(self.folder, rel, "is not UTF-8 text") from None


# which public function loads an artifact of a format (by the format's name before "/")
LOADERS = {"workbench-graph-artifact/": "wb.load (a compiled model)",
           "workbench.tune.artifact/": "wb.load_artifact (one tuned kernel)"}


def artifact_path(folder, what: str) -> Path:
    """``folder`` as a ``Path``; ``TypeError`` naming ``what`` (``"load"``, ``"save"``) for
    anything that is not a path (a model, None, a number).

    Example
    -------
    >>> artifact_path(3, "load")
    Traceback (most recent call last):
    ...
    TypeError: load: expected an artifact folder path (str or os.PathLike), got int
    """
    if not isinstance(folder, str | os.PathLike):
        raise TypeError(f"{what}: expected an artifact folder path (str or os.PathLike), got "
                        f"{type(folder).__name__}")
    return Path(folder)


def verify_folder(folder, fmt: str) -> VerifiedFolder:
    """Check ``folder`` against its manifest (see the module docstring); nothing else of the
    folder is read before every file has passed.

    Raises
    ------
    ArtifactIntegrityError
        Naming the first file at fault.
    ValueError
        When the manifest is intact but of another format than ``fmt``.
    """
    folder = artifact_path(folder, "load")
    if not folder.is_dir():  # the folder may be a symlink (a "latest" link); nothing in it
        raise ArtifactIntegrityError(folder, ".", "does not exist" if not folder.exists()
                                     else "is a file, not an artifact folder")
    manifest_path = folder / MANIFEST
    try:
        if not stat.S_ISREG(os.lstat(manifest_path).st_mode):
            raise ArtifactIntegrityError(folder, MANIFEST, "is not a regular file")
        manifest = json.loads(manifest_path.read_bytes())
    except FileNotFoundError:
        raise ArtifactIntegrityError(folder, MANIFEST, "is missing") from None
    except (OSError, ValueError) as error:
        if isinstance(error, ArtifactIntegrityError):
            raise
        raise ArtifactIntegrityError(folder, MANIFEST, f"is not JSON ({error})") from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise ArtifactIntegrityError(folder, MANIFEST, "has no file list with hashes (made by "
                                     "an older workbench?)")
    if manifest.get("manifest_sha256") != sha256_bytes(_canonical(manifest)):
        raise ArtifactIntegrityError(folder, MANIFEST, "its content changed (its own sha256 "
                                     "does not match)")
    if manifest.get("format") != fmt:
        found = manifest.get("format")
        loader = next((name for prefix, name in LOADERS.items()
                       if isinstance(found, str) and found.startswith(prefix)), None)
        hint = f"; load it with {loader}" if loader else ""
        raise ValueError(f"{folder} is not a {fmt} artifact (format {found!r}){hint}")
    verified = VerifiedFolder(folder, manifest)
    for rel in files:
        verified.path(rel)  # confined and listed
    present = set(_walk(folder)) - {MANIFEST}
    missing = sorted(set(files) - present)
    for rel in sorted(present - set(files)):
        also = f" (and {missing[0]}, listed, is missing: renamed?)" if missing else ""
        raise ArtifactIntegrityError(folder, rel, "is not listed in the manifest" + also)
    for rel in sorted(set(files) - present):
        raise ArtifactIntegrityError(folder, rel, "is missing")
    for rel in sorted(files):
        verified.read(rel)
    return verified


def check_options(folder, name: str, options) -> dict:
    """``options`` (build options read from a manifest) as a dict of names to JSON scalars
    (bool, int, float, None); anything else is refused naming ``name``."""
    scalars = (bool, int, float, type(None))
    if not isinstance(options, dict) or not all(
            isinstance(k, str) and isinstance(v, scalars) for k, v in options.items()):
        raise ArtifactIntegrityError(folder, name, "its build options are not a mapping of "
                                     "names to plain values")
    return dict(options)
