"""Secrets in a command line rendered as a Python list or tuple (`str(CalledProcessError)`):
one of the matchers of `incidents.redact`. Stdlib `re` only, compiled on first use (it is
on the capture path)."""

from __future__ import annotations

import re

from incidents.redact_vetoes import KEEP_VALUES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["ArgvLists"]

_QUOTED = r"""(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")"""
_REGISTRY_TOOLS = frozenset({"docker", "podman", "buildah", "skopeo", "nerdctl", "oras", "helm"})
_PATH_LIKE = ("/", "~", "./", "../", "$", "%", "{", "<")


class ArgvLists:
    """Command lines rendered as a Python list or tuple of quoted words, as
    `str(CalledProcessError)`, `str(TimeoutExpired)` and `repr(argv)` print them
    (`Command '['curl', '-u', 'bob:PW', 'https://x']' returned non-zero exit status 22`):
    the value after `-u`/`--user` (its password), after `-p` of sshpass or a registry
    login, after `-a`/`--pass` of redis-cli, glued to `-p` of mysql, and after any
    `--...password`, `--...token`, ... option. An ordinary list (`['--max-tokens', '4096']`,
    `['a', 'b']`) is kept.
    """

    __slots__ = ("_colon", "_elem", "_glued", "_list", "_option", "_words")

    def __init__(self, secret_words: str) -> None:
        self._words = secret_words
        self._list: re.Pattern[str] | None = None
        self._elem: re.Pattern[str] | None = None
        self._colon: re.Pattern[str] | None = None
        self._glued: re.Pattern[str] | None = None
        self._option: re.Pattern[str] | None = None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        if self._list is None:
            sep = r"[ \t]*,[ \t]*"
            self._list = re.compile(rf"[\[(][ \t]*{_QUOTED}(?:{sep}{_QUOTED})+")
            self._elem = re.compile(r"'(?P<sq>(?:[^'\\\n]|\\.)*)'" r'|"(?P<dq>(?:[^"\\\n]|\\.)*)"')
            self._colon = re.compile(r"""['"][^'":\s+]+:(?P<val>[^'"\s]+)['"]""")
            self._glued = re.compile(r"""['"]-p(?P<val>[^'"\s]+)['"]""")
            self._option = re.compile(rf"(?<![\w.-])--?[a-z0-9_.-]*?(?:{self._words})")
        assert self._elem and self._colon and self._glued and self._option
        for found in self._list.finditer(text):
            elems = list(self._elem.finditer(text, found.start(), found.end()))
            words = [(e.group(e.lastindex or 0) or "").lower() for e in elems]
            program = words[0].rsplit("/", 1)[-1]
            for i, word in enumerate(words):
                after = words[i + 1] if i + 1 < len(words) else None
                if program.startswith(("mysql", "mariadb")) and len(word) > 2:
                    glued = self._glued.fullmatch(text, elems[i].start(), elems[i].end())
                    if glued is not None:
                        yield glued
                        continue
                if after is None or not after or after == "[redacted]":
                    continue
                if word in ("-u", "--user"):
                    nxt = elems[i + 1]
                    pair = self._colon.fullmatch(text, nxt.start(), nxt.end())
                    user = after.split(":", 1)[0]
                    if pair is not None and not (user.isdigit() and pair["val"].isdigit()):
                        yield pair
                elif (
                    word == "-p"
                    and (
                        "sshpass" in (before := {w.rsplit("/", 1)[-1] for w in words[:i]})
                        or ("login" in before and not _REGISTRY_TOOLS.isdisjoint(before))
                    )
                    or (word in ("-a", "--pass") and program == "redis-cli")
                    or (
                        self._option.fullmatch(word)
                        and not after.startswith(("-", *_PATH_LIKE))
                        and after not in KEEP_VALUES
                    )
                ):
                    yield elems[i + 1]
