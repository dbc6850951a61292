"""The cluster's shared secret: Ray's token authentication (Ray >= 2.52), with the token in a file.

Every Ray process of a testbed cluster (GCS, raylets, workers, the driver) runs with
`RAY_AUTH_MODE=token` and `RAY_AUTH_TOKEN_PATH=FILE`; Ray reads the token from the first line of FILE,
whitespace trimmed (ray/src/ray/rpc/authentication/authentication_token_loader.cc, precedence:
RAY_AUTH_TOKEN, then RAY_AUTH_TOKEN_PATH, then ~/.ray/auth_token). The token itself is never put on a
command line (argv is world-readable in /proc), in the environment or in a log: only the file's path is.
RAY_AUTH_TOKEN is removed from the environment handed to Ray, so the file is the one source.

The file: `--token-file`, else $TCPPROFILE_CLUSTER_TOKEN, else /etc/tcpprofile/cluster-token for root
and ~/.config/tcpprofile/cluster-token for anyone else. It must be a regular file (no symlink) owned by
the user and readable by nobody else (mode 0600 or stricter), holding one token of at least
MIN_TOKEN_CHARS printable characters. No Ray import here (`cluster start` and the unit tests need none).
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from ..errors import TcpProfileError

ENV_VAR = "TCPPROFILE_CLUSTER_TOKEN"
SYSTEM_PATH = Path("/etc/tcpprofile/cluster-token")
MIN_TOKEN_CHARS = 32
TOKEN_BYTES = 32                       # a new token: 32 random bytes = 64 hex characters (256 bits)


class TokenError(TcpProfileError):
    """The token file is missing, unreadable, too open or malformed (the message names the file)."""


def default_path() -> Path:
    if os.geteuid() == 0:
        return SYSTEM_PATH
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "tcpprofile" / "cluster-token"


def token_path(explicit: str | os.PathLike | None = None) -> Path:
    """The token file this process uses: the given path, else $TCPPROFILE_CLUSTER_TOKEN, else the default."""
    chosen = explicit or os.environ.get(ENV_VAR) or default_path()
    return Path(chosen).expanduser().absolute()


def check(path: Path) -> Path:
    """The token file, checked: a regular file of this user's, mode 0600 or stricter, one token.
    Raises TokenError naming the file and what is wrong (never the token)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise TokenError(f"cluster token file {path} does not exist: create it with `tcpprofile cluster token` "
                         f"on the head and copy it (mode 0600) to every node and driver, or name another "
                         f"with {ENV_VAR} (docs/cluster.md)") from None
    except OSError as err:
        raise TokenError(f"cluster token file {path} cannot be read ({err.strerror}; a symlink is refused)") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise TokenError(f"cluster token file {path} is not a regular file")
        if st.st_uid != os.geteuid():
            raise TokenError(f"cluster token file {path} belongs to uid {st.st_uid}, not to this user "
                             f"(uid {os.geteuid()}): it must be this user's, mode 0600")
        if st.st_mode & 0o077:
            raise TokenError(f"cluster token file {path} has mode {stat.S_IMODE(st.st_mode):04o}: group or "
                             f"others may read or write it; allowed: 0600 or stricter (chmod 600 {path}, "
                             f"then rotate the token: it may have been read)")
        first = f.read(4096).split(b"\n", 1)[0].strip()
    if len(first) < MIN_TOKEN_CHARS or not all(0x21 <= b <= 0x7E for b in first):
        raise TokenError(f"cluster token file {path}: its first line must be one token of at least "
                         f"{MIN_TOKEN_CHARS} printable ASCII characters without spaces")
    return path


def create(path: Path, *, replace: bool = False) -> Path:
    """Write a new random token to `path` (mode 0600; its directory made 0700 if new). Without
    `replace` an existing file is an error; with it the file is replaced atomically (rotation)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = secrets.token_hex(TOKEN_BYTES).encode()
    target = path.with_name(f".{path.name}.new") if replace else path
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise TokenError(f"cluster token file {target} exists already"
                         + ("" if replace else " (to replace it: `tcpprofile cluster token --rotate`)")) from None
    try:
        os.fchmod(fd, 0o600)                       # whatever the umask
        os.write(fd, token + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    if replace:
        os.replace(target, path)
    return path


def ensure(path: Path) -> tuple[Path, bool]:
    """The checked token file, created first if it does not exist; (path, created)."""
    created = False
    if not os.path.lexists(path):
        create(path)
        created = True
    return check(path), created


def ray_environment(path: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a Ray process of this cluster: token authentication on, the token read from
    `path` (already checked), no other source of a token."""
    env = dict(os.environ if base is None else base)
    env.pop("RAY_AUTH_TOKEN", None)
    env["RAY_AUTH_MODE"] = "token"
    env["RAY_AUTH_TOKEN_PATH"] = str(path)
    return env
