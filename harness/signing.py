"""Signing: a record (a JSON object) and the runner's key in; an HMAC-SHA256 signature out.

Only the runner holds the key, so a record that verifies was written by a runner with this key
and not edited since: a candidate that reached the results folder could not forge one, and a
resumed run reuses nothing it did not write itself. The key lives in
REPO_ROOT/.cache/harness/record.key (folder 0700, file 0600): no sandbox user can read it, and
it must never be passed to a judge or sandbox (environment, command line or file).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import tempfile
from pathlib import Path

from harness.env import REPO_ROOT

DEFAULT_KEY_PATH = REPO_ROOT / ".cache" / "harness" / "record.key"
SIGNATURE_FIELD = "signature"
_KEY_BYTES = 32
_HEX_KEY = re.compile(r"[0-9a-f]{64}")


class RecordKeyError(Exception):
    """The key file exists but cannot be used; the message names the file and what to do."""


def record_key(path: Path | None = None) -> bytes:
    """The runner's signing key, created on first use (32 random bytes, stored as hex)."""
    path = Path(path) if path is not None else DEFAULT_KEY_PATH
    if not path.exists():
        _create_key(path)
    return _load_key(path)


def _create_key(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # mkdir's mode is masked by the umask and ignored for a folder that already exists.
    os.chmod(path.parent, 0o700)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_bytes(_KEY_BYTES).hex() + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            # link, not rename: two runners starting together must end up with one key, not
            # each sign with a key the other then overwrites.
            os.link(temp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(temp)


def _load_key(path: Path) -> bytes:
    hint = f"delete {path} to make a new key (records signed with the old one will then be re-run)"
    try:
        info = os.stat(path)
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordKeyError(f"record key {path} cannot be read ({exc}); {hint}") from exc
    if info.st_mode & 0o077:
        raise RecordKeyError(f"record key {path} has mode {stat.filemode(info.st_mode)}: others may read it, "
                             f"so signatures prove nothing; {hint}")
    if not _HEX_KEY.fullmatch(text):
        raise RecordKeyError(f"record key {path} is not 64 hex digits; {hint}")
    return bytes.fromhex(text)


def _canonical(data: dict) -> bytes:
    unsigned = {k: v for k, v in data.items() if k != SIGNATURE_FIELD}
    # A round trip through JSON first, so that what was signed before writing and what is
    # verified after reading are the same text: tuples become lists, int dict keys become
    # strings (and sort the same way on both sides).
    plain = json.loads(json.dumps(unsigned, allow_nan=True))
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()


def sign(data: dict, key: bytes) -> str:
    """Hex HMAC-SHA256 of `data` without its signature field."""
    return hmac.new(key, _canonical(data), hashlib.sha256).hexdigest()


def verify(data: dict, key: bytes) -> bool:
    claimed = data.get(SIGNATURE_FIELD)
    if not isinstance(claimed, str) or not claimed:
        return False
    try:
        return hmac.compare_digest(sign(data, key), claimed)
    except (TypeError, ValueError):    # unserialisable data, or a signature with non-ASCII text
        return False
