"""What an incident records of how it was classified and grouped (`incident.json`):
`classified_by` (which rule decided its error code and failure class, on which input, or
that the caller gave them) and `signature_inputs` (what its `error_signature` was made
of, and by which normalisation rules).

Pure and stdlib only: capture imports it (no typing, no dataclasses on that path).
"""

from __future__ import annotations

from incidents.signature import NORMALIZATION_VERSION, join_signature, normalize_message

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from typing import Any

    from incidents.classify import Classification
    from incidents.infer import Scan

__all__ = [
    "GIVEN_OPTIONS",
    "classified_by",
    "current_signature",
    "normalization_of",
    "signature_fields",
]

# what a caller can give instead of the classifier's verdict, and the option that gives it
GIVEN_OPTIONS = {"failure_class": "--failure-class", "error_code": "--error-code"}


def classified_by(verdict: Classification, given: list[str]) -> dict[str, Any]:
    """`classified_by`: the classifier's verdict and what decided it (`rule`, the input it
    matched in `where`, the sentence `reason`), and `given`: the fields the caller set
    (`--failure-class`, `--error-code`), which the incident has instead of the verdict's."""
    return {
        "rule": verdict.rule,
        "where": verdict.where,
        "reason": verdict.reason,
        "error_code": verdict.error_code_value,
        "failure_class": verdict.failure_class_value,
        "given": [field for field in GIVEN_OPTIONS if field in given],
    }


def signature_fields(
    failure_class: str, step: str, message: str, found: Scan | None = None
) -> tuple[str, dict[str, Any]]:
    """(`error_signature`, `signature_inputs`) of a failure, by the current rules: made
    of what failed (`failure_basis.basis` of what its output says, `found`), else of its
    message."""
    from incidents.failure_basis import basis

    text, source = basis(found, message)
    normalized = normalize_message(text)
    inputs: dict[str, Any] = {
        "failure_class": failure_class,
        "step": step,
        "normalized": normalized,
        "normalization": NORMALIZATION_VERSION,
        "basis": source,
    }
    if source == "failure":
        inputs["failure"] = text
    return join_signature(failure_class, step, normalized), inputs


def normalization_of(doc: dict[str, Any]) -> int:
    """The version of the normalisation rules the incident's signature was made by (1: it
    records none, as every incident captured before versions were recorded)."""
    inputs = doc.get("signature_inputs")
    version = inputs.get("normalization") if isinstance(inputs, dict) else None
    return version if isinstance(version, int) and not isinstance(version, bool) else 1


def current_signature(doc: dict[str, Any]) -> str:
    """The incident's signature by the current rules: its `error_signature` when the
    current rules made it, else made again from what it was made of (its failure class,
    step and stored message: capture signs the message exactly as it stores it). A capture
    of the same failure today gets this signature, so it still folds into the incident."""
    signature = doc.get("error_signature")
    if normalization_of(doc) == NORMALIZATION_VERSION and isinstance(signature, str):
        return signature
    from incidents.failure_basis import basis

    inputs = doc.get("signature_inputs")
    failure = inputs.get("failure") if isinstance(inputs, dict) else None
    if isinstance(failure, str) and failure:
        text = basis(None, failure)[0]  # what failed, as recorded
    else:
        text = basis(None, str(doc.get("message", "")))[0]
    return join_signature(
        str(doc.get("failure_class", "")), str(doc.get("step", "")), normalize_message(text)
    )
