"""The workdir as it was when an agent claimed a handed-off incident, and what changed.

`claim` snapshots the workdir once per handoff step with the bytes of its files
(`fixers.snapshot`, the runner's limits), kept under `.state/handoff/<id>/step_<N>/` so it
outlives the claiming process (`handoff_step_<N>.json` keeps the digests and when it was
claimed). At `submit`, every change outside the target files is reverted (changed and
deleted files get their old bytes, created files and emptied new folders are removed) and
reported; the machine's own reports root is never touched.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from incidents import artifacts, fsutil
from incidents.errors import InvalidDocument, NotWaiting
from incidents.fixers import snapshot
from incidents.layout import Root
from incidents.models import ErrorPipelineContext

_MANIFEST = "manifest.json"
_MANIFEST_MAX = 64 << 20
_DIGESTS = snapshot.Limits(max_file_bytes=0, max_files=1 << 40, max_total_bytes=1 << 40)


def record_claim(
    root: Root, incident_id: str, workdir: Path, step: int, agent: str, claimed_at: str
) -> None:
    """The workdir as the claim finds it, once per handoff step (a re-claim keeps the
    first): the snapshot with its bytes, and `handoff_step_<N>.json` with its digests."""
    baseline = root.runs_dir(incident_id) / artifacts.handoff_step_name(step)
    saved = snapshot_dir(root, incident_id, step)
    if not (saved / _MANIFEST).exists():
        snap = take_restorable(root, workdir)
        save_snapshot(saved, snap)
    else:
        snap = load_snapshot(saved)
    if not baseline.exists():
        fsutil.ensure_dir(baseline.parent)
        fsutil.atomic_write_json(
            baseline,
            {
                "step": step,
                "agent": agent,
                "claimed_at": claimed_at,
                "digests": {rel: [e.kind, e.digest] for rel, e in snap.files.items()},
            },
        )


def snapshot_dir(root: Root, incident_id: str, step: int) -> Path:
    return root.state / "handoff" / incident_id / f"step_{step}"


def _skip(root: Root, workdir: Path) -> tuple[str, ...]:
    """The reports root's top-level name when it lives directly in the workdir."""
    rel = _root_prefix(root, workdir)
    return (rel,) if rel and "/" not in rel else ()


def _root_prefix(root: Root, workdir: Path) -> str | None:
    """The reports root relative to the workdir (None when it is not inside it): the
    machine's own files there are never an agent's change, never reverted."""
    real_root = os.path.realpath(root.path)
    real_work = os.path.realpath(workdir)
    if os.path.commonpath([real_root, real_work]) != real_work:
        return None
    rel = os.path.relpath(real_root, real_work)
    return "" if rel == "." else rel.replace(os.sep, "/")


def take_restorable(root: Root, workdir: Path) -> snapshot.Snapshot:
    """The workdir with the bytes of its files (the runner's limits); a workdir over them
    keeps digests only, so a change outside the targets is reported but not reverted."""
    try:
        return snapshot.take(workdir, _skip(root, workdir), snapshot.Limits())
    except snapshot.SnapshotTooLarge:
        return snapshot.take(workdir, _skip(root, workdir), _DIGESTS)


def save_snapshot(folder: Path, snap: snapshot.Snapshot) -> None:
    """Blobs (by digest) first, the manifest last (atomic): a crash leaves no manifest or a
    complete one; a re-claim then takes the snapshot again."""
    blobs = folder / "blobs"
    fsutil.ensure_dir(blobs)
    files: dict[str, list[Any]] = {}
    for rel, entry in snap.files.items():
        kept = entry.kind == "file" and entry.data is not None
        if kept and not (blobs / entry.digest).exists():
            fsutil.atomic_write_bytes(blobs / entry.digest, entry.data or b"")
        files[rel] = [entry.kind, entry.digest, entry.mode, kept]
    manifest = {"root": str(snap.root), "dirs": sorted(snap.dirs), "files": files}
    fsutil.atomic_write_json(folder / _MANIFEST, manifest)


def load_snapshot(folder: Path) -> snapshot.Snapshot:
    doc = fsutil.read_json(folder / _MANIFEST, _MANIFEST_MAX)
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
        raise InvalidDocument(str(folder / _MANIFEST), "is not a handoff snapshot")
    snap = snapshot.Snapshot(Path(str(doc["root"])), dirs={str(d) for d in doc["dirs"]})
    for rel, (kind, digest, mode, kept) in doc["files"].items():
        data = None
        if kept:
            data = fsutil.read_regular_file(folder / "blobs" / str(digest), snapshot.MAX_FILE_BYTES)
        snap.files[str(rel)] = snapshot.Entry(str(kind), str(digest), data, int(mode))
    return snap


def _before(
    root: Root, workdir: Path, ctx: ErrorPipelineContext
) -> tuple[snapshot.Snapshot | None, str | None]:
    """The claim's snapshot (with bytes) and its claimed_at; a claim made before snapshots
    were kept has digests only (then nothing can be reverted)."""
    try:
        base = fsutil.read_json_object(
            root.runs_dir(ctx.workstream_id) / artifacts.handoff_step_name(ctx.step)
        )
    except FileNotFoundError:
        return None, None
    claimed_at = base.get("claimed_at")
    when = claimed_at if isinstance(claimed_at, str) else None
    saved = snapshot_dir(root, ctx.workstream_id, ctx.step)
    if (saved / _MANIFEST).exists():
        return load_snapshot(saved), when
    snap = snapshot.Snapshot(Path(os.path.realpath(workdir)))
    for rel, (kind, digest) in dict(base.get("digests") or {}).items():
        snap.files[rel] = snapshot.Entry(str(kind), str(digest), None, 0)
    return snap, when


def changes(
    root: Root, workdir: Path, ctx: ErrorPipelineContext
) -> tuple[list[str], list[str], list[str], str | None]:
    """Since the claim: (changed targets, changed files outside the targets, those of them
    that could not be reverted, claimed_at). Changes outside the targets are reverted:
    changed and deleted files get their old bytes back, created files are removed; what
    was there is moved into `.state/stray/<id>/` first, never deleted."""
    before, claimed_at = _before(root, workdir, ctx)
    if before is None:
        return [], [], [], None
    if before.root != Path(os.path.realpath(workdir)):
        raise NotWaiting(f"the workdir of {ctx.workstream_id} moved since the claim")
    after = snapshot.take(workdir, _skip(root, workdir), _DIGESTS)
    prefix = _root_prefix(root, workdir)
    changed = [
        p
        for p in snapshot.changed_paths(before, after)
        if prefix is None or not (prefix == "" or p == prefix or p.startswith(prefix + "/"))
    ]
    wanted = {os.path.normpath(t) for t in ctx.target_files}
    outside = [p for p in changed if p not in wanted]
    # what is replaced is kept: an edit of a person's in the same window is not lost
    aside = str(root.state / "stray" / ctx.workstream_id)
    _, unreverted = snapshot.restore(before, outside, aside)
    snapshot.remove_new_dirs(before, after)
    return [p for p in changed if p in wanted], outside, unreverted, claimed_at
