"""Progress fields that carry a JSONL log's step, lifted out of each row before its
metrics become columns:

- LLaMA-Factory `trainer_log.jsonl` (LogCallback.on_log in
  src/llamafactory/train/callbacks.py): `current_steps` is the trainer's global step
  (a step spelling in parsers/columns.py) and `total_steps` the planned total.
- ms-swift `logging.jsonl` (add_train_message in swift/trainers/callback.py): the step
  and the planned total travel as one string, `"global_step/max_steps": "5/100"`.

Without this the rows were read in line order and every step cited was a line number.
The planned total goes to the run's meta as `max_steps`, as for trainer_state.json."""

from __future__ import annotations

from typing import Any

SWIFT_KEY = "global_step/max_steps"
LLAMAFACTORY_STEP, LLAMAFACTORY_TOTAL = "current_steps", "total_steps"
SWIFT_STEP = "global_step"  # the name the lifted step gets; a step spelling
MARKS = (SWIFT_KEY.encode(), LLAMAFACTORY_STEP.encode())  # a block without these has no progress field


class Planned:
    """The last planned total step count seen, if any (a resumed run may change it)."""

    __slots__ = ("max_steps",)

    def __init__(self) -> None:
        self.max_steps: int | None = None

    def meta(self) -> dict[str, int]:
        return {} if self.max_steps is None else {"max_steps": self.max_steps}


def lift(rows: list[dict[str, Any]], raw: bytes, planned: Planned) -> None:
    """Rewrite rows in place: the step under a step name, the planned total into `planned`.
    A byte test first, so other logs pay nothing per row."""
    swift, llamafactory = (m in raw for m in MARKS)
    if swift:
        for r in rows:
            text = r.pop(SWIFT_KEY, None)
            if text is not None:
                _swift(r, text, planned)
    if llamafactory:
        for r in rows:
            if LLAMAFACTORY_STEP in r:
                total = r.pop(LLAMAFACTORY_TOTAL, None)
                if _whole(total):
                    planned.max_steps = int(total)


def _swift(row: dict[str, Any], text: object, planned: Planned) -> None:
    """"5/100" -> step 5, planned 100. Anything else leaves the row without a step, so it
    inherits the previous row's, as rows without a step do everywhere."""
    if not isinstance(text, str):
        return
    done, _, total = text.partition("/")
    if done.strip().isdigit():
        row.setdefault(SWIFT_STEP, int(done))
    if total.strip().isdigit():
        planned.max_steps = int(total)


def _whole(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0
