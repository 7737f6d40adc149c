"""Classify a failure: an error code (seed 002) and a failure class (seed 003).

Pure and table-driven; stdlib only (`re`; the enums of `incidents.codes` only when a
caller asks a verdict for them: capture records their values). The rules are
data in `incidents.rules` (one table per ecosystem; read its docstring for the row format
and what each specificity level means). The order of decisions:

1. `timed_out` -> TIMEOUT / transient.
2. A decisive exit code: 124 (`timeout(1)`) -> TIMEOUT, 126 (not executable) and 127
   (not found) -> env.
3. The text rules, over the message and over the log (its last `LOG_WINDOW` characters).
   In each, the most specific matching rule wins (`incidents.rules`: level, then the
   class retrying cannot fix, then the more specific code, then table order). The
   message is the caller's own summary: when it names a cause (a rule above BARE
   matches), it decides; otherwise the log's best rule decides if it is more specific.
4. A signal exit (137 SIGKILL -> env, most often the OOM killer; 143 SIGTERM ->
   transient) says how the process ended, not why: the text decides only when it names a
   TIMEOUT or a cause of the exit's own class.
5. Nothing matched: UNKNOWN / unknown. A non-zero exit alone is *not* TASK_FAILED:
   seed 002 keeps TASK_FAILED for the literal marker and says "everything else" is
   UNKNOWN, and both are retried alike; the reason names the exit code.

Speed: capture classifies once per process, so nothing is compiled ahead, and only the
rule modules holding rules the text's words gate are imported (the index is generated:
`python -m incidents.classify_index`). The text is encoded once, its words collected with
one `bytes.translate`; a gated rule is kept only when one clause of the literal runs its
pattern needs all occur in the text (read from the pattern's parse by the generator);
only those rules are compiled and searched, on the distinct lines holding their words (a
match lies within one line, so nothing else can match).

Decisions on seed 002's "not retried" codes:

- RATE_LIMIT -> **transient**. Seed 002 does not re-run the task at once ("return
  API_ERROR immediately"); a rate limit still clears by itself, which is what transient
  means here: the check is retried with backoff and no code is touched. The exception is
  a quota that only a human can lift (`insufficient_quota`, billing): RATE_LIMIT /
  never_retry.
- HOOK_FAILURE -> **never_retry**. Seed 002: "infrastructure problem, fail fast", and
  no fixer can repair a broken hook; it escalates at once. Hook output that shows test
  or lint failures, or a formatter hook that modified files, is classified by what it
  shows (TEST_FAILURE / LINT_FAILURE, code): those are verdicts, hooks are BARE.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from incidents.codes import ErrorCode, FailureClass

__all__ = ["LOG_WINDOW", "Classification", "classify", "code_of_findings"]

LOG_WINDOW = 64 * 1024


class Classification(tuple[str, str, str, str, str]):
    """What decided a failure's code and class: `(error_code, failure_class, reason, rule, where)`.

    The code and the class are held as their values (`error_code_value`); `error_code` and
    `failure_class` give the StrEnums, which capture does not create (`incidents.codes`).

    `rule` names the rule (or the exit-code meaning) that decided, "" when nothing did;
    `where` is the input it matched: "timed_out", "exit_code", "message", "log" or "none".
    `reason` is the sentence for people. `classified_by` in incident.json records these.
    (A tuple subclass rather than `typing.NamedTuple`: capture does not import `typing`.)
    """

    __slots__ = ()

    def __new__(
        cls,
        error_code: str,
        failure_class: str,
        reason: str,
        rule: str = "",
        where: str = "none",
    ) -> Classification:
        # str(): a StrEnum given is held as its value, as the rows spell it
        return super().__new__(cls, (str(error_code), str(failure_class), reason, rule, where))

    @property
    def error_code(self) -> ErrorCode:
        from incidents.codes import ErrorCode

        return ErrorCode(self[0])

    @property
    def failure_class(self) -> FailureClass:
        from incidents.codes import FailureClass

        return FailureClass(self[1])

    @property
    def error_code_value(self) -> str:
        return self[0]

    @property
    def failure_class_value(self) -> str:
        return self[1]

    @property
    def reason(self) -> str:
        return self[2]

    @property
    def rule(self) -> str:
        return self[3]

    @property
    def where(self) -> str:
        return self[4]

    def __repr__(self) -> str:
        return f"Classification({self[0]}, {self[1]}, {self[2]!r})"


class _Rule:
    """One row of `incidents.rules`, made on first use; a lower `rank` wins."""

    __slots__ = ("rank", "name", "ecosystem", "level", "code", "cls", "words", "source")

    def __init__(
        self, position: int, ecosystem: str, row: tuple[str, int, str, str, str, str, str]
    ):
        from incidents.rules import CLASS_ORDER, CODE_ORDER

        self.ecosystem = ecosystem
        self.name, self.level, self.code, self.cls, words, self.source, _ = row
        self.words = tuple(w.encode() for w in words.split())
        # level, then the class retrying cannot fix, the more specific code, table order
        self.rank = (
            -self.level,
            CLASS_ORDER.index(self.cls),
            CODE_ORDER.index(self.code),
            position,
        )


_rows: dict[int, tuple[str, tuple[str, int, str, str, str, str, str]]] = {}  # as loaded
_made: dict[int, _Rule] = {}
_index: dict[bytes, bytes] = {}  # prefilter word -> the rows it gates (b"3 17"), once parsed
_needs: list[bytes] = []  # row -> the clauses of runs its pattern needs, as generated
_compiled: dict[int, re.Pattern[str]] = {}
# bytes.translate table: [0-9_a-z] kept, every other byte a space (one constant: the
# compiler folds it; a generator over 256 bytes cost 20 us of every capture)
_WORDS = b" " * 48 + b"0123456789" + b" " * 37 + b"_ " + b"abcdefghijklmnopqrstuvwxyz" + b" " * 133
# non-ASCII letters that IGNORECASE matches to ASCII ones (ı İ -> i, ſ -> s, K -> k): a
# text holding one may match a pattern without holding its runs (classify_index)
_FOLDS = (b"\xc4\xb0", b"\xc4\xb1", b"\xc5\xbf", b"\xe2\x84\xaa")
_FIND_MAX = 64  # words looked up one by one; a longer text parses the whole index
_exit: dict[int, tuple[str, tuple[int, ...], str, str, bool, str]] = {}
_full: list[bool] = []  # [True]: every table indexed as it is (no generated index)


def _load() -> None:
    """The exit codes, once (a text alone needs none). The word index is generated (`incidents.rules_index`), so
    only the rule modules a text needs are imported."""
    if _exit:
        return
    from incidents import rules

    for entry in rules.EXIT_CODES:
        for number in entry[1]:
            _exit[number] = entry


def _gated(words: set[bytes]) -> set[int]:
    """The rows whose prefilter words are among `words`."""
    if not _index and len(words) > _FIND_MAX:
        _parse_index()
    if _index:
        return {int(p) for word in words & _index.keys() for p in _index[word].split()}
    from incidents.rules_index import WORDS

    positions: set[int] = set()
    for word in words:
        part = WORDS.get(word[0], b"")
        i = part.find(b"\n" + word + b" ")
        if i >= 0:
            end = part.find(b"\n", i + 1)
            positions.update(map(int, part[i + len(word) + 2 : None if end < 0 else end].split()))
    return positions


def _parse_index() -> None:
    from incidents.rules_index import WORDS

    for part in WORDS.values():  # 0.2 ms: the positions stay text until a word needs them
        _index.update(line.split(b" ", 1) for line in part[1:].split(b"\n"))  # type: ignore[misc]


def _may_match(position: int, low: bytes) -> bool:
    """False when row `position`'s pattern cannot match `low` (what its pattern needs,
    read from the generated index: none of its clauses' runs all occur)."""
    if not _needs:
        from incidents.rules_index import NEEDS

        _needs.extend(NEEDS.split(b"\n"))
    line = _needs[position]
    if not line:
        return True
    return any(all(run in low for run in clause.split(b"\x1f")) for clause in line.split(b"\x1e"))


def _load_all() -> None:
    """Index every table as it is: the generated index is stale (tests catch that)."""
    from incidents import rules

    for cache in (_index, _rows, _made, _compiled):
        cache.clear()
    index: dict[bytes, list[int]] = {}
    for eco, table in rules.tables().items():
        for row in table:
            for word in row[4].split():
                index.setdefault(word.encode(), []).append(len(_rows))
            _rows[len(_rows)] = (eco, row)
    _index.update((word, b" ".join(b"%d" % p for p in ps)) for word, ps in index.items())
    _full.append(True)


def _fetch(positions: set[int]) -> bool:
    """Import the tables holding the rows at `positions`; False: the generated index does
    not describe them (an ecosystem's rows, their prefilter words or the lengths of their
    patterns differ)."""
    from incidents.rules_index import ECOSYSTEMS

    for position in positions - _rows.keys():
        eco, module, first, words, sizes = next(e for e in reversed(ECOSYSTEMS) if e[2] <= position)
        try:  # __import__, not importlib (its import costs ~1 ms on the capture path)
            found = __import__(f"incidents.rules.{module}", fromlist=["RULES"])
            table = getattr(found, "RULES", {})
        except ImportError:
            return False
        rows = table.get(eco, ())
        if "|".join(row[4] for row in rows) != words or tuple(len(r[5]) for r in rows) != sizes:
            return False
        _rows.update((first + i, (eco, row)) for i, row in enumerate(rows))
    return True


def _rule(position: int) -> _Rule:
    rule = _made.get(position)
    if rule is None:
        rule = _made[position] = _Rule(position, *_rows[position])
    return rule


# A pattern is searched on at most this many bytes of a line around each of its words: on
# text of bounded pieces, a pattern that retries at every position of a long run (what a
# backtracking engine does) costs at most this many steps per byte, so a crafted log is
# classified in time linear in its size. A longer line is cut to a window of LINE_AROUND
# bytes each side of the word; what a rule decides lies near its word.
LINE_MAX = 512
LINE_AROUND = 256


def _lines_with(raw: bytes, low: bytes, word: bytes) -> set[bytes]:
    """The distinct lines of `raw` that hold `word` as a whole word (found in `low`, its
    lowercase twin: `bytes.lower` keeps every offset), a line over `LINE_MAX` bytes as the
    window around each occurrence."""
    found: set[bytes] = set()
    size, n = len(low), len(word)
    i = low.find(word)
    while i >= 0:
        before = low[i - 1] if i else 32
        after = low[i + n] if i + n < size else 32
        if _WORDS[before] == 32 and _WORDS[after] == 32:
            start = low.rfind(b"\n", 0, i) + 1
            end = low.find(b"\n", i)
            end = size if end < 0 else end
            if end - start > LINE_MAX:
                start, end = max(start, i - LINE_AROUND), min(end, i + n + LINE_AROUND)
            found.add(raw[start:end])
            i = low.find(word, end)
        else:
            i = low.find(word, i + 1)
    return found


def _best(text: str, code: str = "") -> _Rule | None:
    """The most specific rule that matches `text` (only rules giving `code`, if set)."""
    raw = text.encode("utf-8", "replace")
    low = raw.lower()
    present = set(low.translate(_WORDS).split())
    positions = _gated(present)
    if not _full:
        if not any(fold in low for fold in _FOLDS):
            positions = {p for p in positions if _may_match(p, low)}
        if not _fetch(positions):
            _load_all()
            return _best(text, code)
    candidates = sorted((_rule(position) for position in positions), key=lambda r: r.rank)
    lines: dict[bytes, set[bytes]] = {}  # per word, shared by the rules it gates
    for rule in candidates:
        if code and rule.code != code:
            continue
        held: set[bytes] = set()
        for word in rule.words:
            if word in present:
                if word not in lines:
                    lines[word] = _lines_with(raw, low, word)
                held |= lines[word]
        pattern = _compiled.get(rule.rank[-1])
        if pattern is None:
            pattern = _compiled[rule.rank[-1]] = re.compile(rule.source)
        if pattern.search(b"\n".join(held).decode("utf-8", "replace")):
            return rule
    return None


def _verdict(rule: _Rule, where: str) -> Classification:
    reason = f"pattern {rule.name!r} in {where} -> {rule.code}/{rule.cls}"
    return Classification(rule.code, rule.cls, reason, rule.name, where)


def _text(message: str, log_text: str) -> tuple[_Rule, str] | None:
    """The deciding text rule and where it matched: the message when it names a cause."""
    in_message = _best(message) if message else None
    if in_message is not None and in_message.level > 1:
        return in_message, "message"
    in_log = _best(log_text[-LOG_WINDOW:]) if log_text else None
    if in_log is not None and (in_message is None or in_log.rank < in_message.rank):
        return in_log, "log"
    return (in_message, "message") if in_message is not None else None


def _timeout_in(message: str, log_text: str) -> tuple[_Rule, str] | None:
    for where, text in (("message", message), ("log", log_text[-LOG_WINDOW:])):
        rule = _best(text, "TIMEOUT") if text else None
        if rule is not None:
            return rule, where
    return None


def classify(
    message: str, log_text: str = "", exit_code: int | None = None, timed_out: bool = False
) -> Classification:
    """Classify one failure from its message, its log, its exit code and whether it timed out."""
    if timed_out:
        return Classification(
            "TIMEOUT", "transient", "timed_out -> TIMEOUT", "timed out", "timed_out"
        )
    entry = None
    if exit_code:
        _load()
        entry = _exit.get(exit_code)
    if entry is not None and entry[4]:
        return _by_exit(entry, exit_code)
    found = _text(message, log_text)
    if entry is not None:
        if found is None or not (found[0].code == "TIMEOUT" or found[0].cls == entry[3]):
            found = _timeout_in(message, log_text)
        if found is None:
            return _by_exit(entry, exit_code)
    if found is not None:
        return _verdict(*found)
    if exit_code:
        return Classification("UNKNOWN", "unknown", f"exit code {exit_code}, no rule matched")
    return Classification("UNKNOWN", "unknown", "no rule matched")


def _by_exit(
    entry: tuple[str, tuple[int, ...], str, str, bool, str], exit_code: int | None
) -> Classification:
    name, _, code, cls, _, meaning = entry
    reason = f"exit code {exit_code} ({meaning}) -> {code}/{cls}"
    return Classification(code, cls, reason, name, "exit_code")


def code_of_findings(categories: set[str], timed_out: bool = False) -> ErrorCode | None:
    """The error code a canonical check's findings amount to (None: no finding)."""
    from incidents.codes import ErrorCode
    from incidents.vocab import Category  # not on the capture path (incidents.codes)

    if timed_out:
        return ErrorCode.TIMEOUT

    # What a check's findings say, in seed 002's codes, most telling first: a file that
    # does not parse explains everything after it; a failing test beats the lint around it.
    finding_codes = (
        (Category.SYNTAX, ErrorCode.SYNTAX),
        (Category.TEST, ErrorCode.TEST_FAILURE),
        (Category.VERIFICATION, ErrorCode.TASK_FAILED),
        (Category.TAMPER, ErrorCode.LINT_FAILURE),
        (Category.TYPE, ErrorCode.LINT_FAILURE),
        (Category.SECURITY, ErrorCode.LINT_FAILURE),
        (Category.LINT, ErrorCode.LINT_FAILURE),
        (Category.IMPORT, ErrorCode.LINT_FAILURE),
        (Category.FORMAT, ErrorCode.LINT_FAILURE),
    )
    return next((code for cat, code in finding_codes if cat.value in categories), None)
