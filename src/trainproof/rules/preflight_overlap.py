"""Preflight rules on what records share beyond exact copies: near-duplicates inside
the training set (`--near-dup`) and evaluation records leaked into it (`--eval`).
The measurements are probes/dataset_near.py's and probes/dataset_contamination.py's;
every number that can change these verdicts is declared here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainproof.model import Finding, Level, Location, Skip, SkipKind
from trainproof.probes.dataset_contamination import EvalIndex
from trainproof.probes.dataset_near import NearParams, candidate_probability
from trainproof.probes.dataset_read import unpack
from trainproof.rules import preflight_records  # noqa: F401  (registers "duplicates", which `after=` needs)
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.preflight import G, Preflight, location, place

_NORMALISED = ("Texts are compared normalised: case-folded (Unicode), ASCII punctuation and whitespace "
               "collapsed to single word breaks (non-ASCII punctuation such as curly quotes stays part "
               "of its word); a chat record is its turns' contents; a record longer than 1 MiB "
               "characters is compared on its first 1 MiB.")


def _s_curve(bands: int, rows: int, at: tuple[float, ...]) -> str:
    return ", ".join(f"J={j:.1f}: {candidate_probability(j, bands, rows):.1%}" for j in at)


NEAR_DUP = rule(
    id="TP-PRE-NEAR-DUPLICATE", level=Level.WARN, group=G,
    title="Near-duplicate records found.",
    evidence="{count} records ({share:.2%} of {n}) are near-copies of another record (estimated "
    "Jaccard similarity of {limit_shingle:.0f}-word shingles >= {limit_jaccard}; {clusters} clusters; exact "
    "copies are TP-PRE-DUPLICATE-TEXT's and not counted here); first: {first}",
    summary="Records that are lightly edited or templated copies of each other (`--near-dup`): "
    "MinHash signatures over word shingles, LSH banding, pairs verified by estimated similarity.",
    why="Near-copies are trained on several times per epoch just as exact copies are: the model "
    "memorises them, the effective dataset is smaller than its record count, and a split drawn "
    "from such a file puts copies of eval items into training.",
    fix="Deduplicate with MinHash-LSH (datatrove, text-dedup, NeMo Curator) at the same "
    "similarity, or drop the listed records' clusters.",
    thresholds={
        "jaccard": Threshold(0.7, "estimated Jaccard similarity", "A 3 % word edit of a 100-word "
                             "record leaves about 0.83 (3-word shingles); unrelated texts of one topic "
                             "stay far below 0.3. 0.7 is where curation pipelines put near-duplicate "
                             "thresholds (0.7-0.8)."),
        "shingle": Threshold(3, "words", "Five-word shingles halve a light edit's similarity faster "
                             "(each changed word breaks five shingles: 3 % edits give ~0.74, too close "
                             "to any threshold); three words keep word order and give ~0.83."),
        "bins": Threshold(128, "signature bytes", "The similarity estimate's standard error is "
                          "sqrt(J(1-J)/128): 0.04 at J=0.7. 128 bytes per record."),
        "bands": Threshold(16, "LSH bands", "16 bands of 8 rows put the S-curve's midpoint at "
                           "(1/16)^(1/8) = 0.71: the chance a pair becomes a candidate is "
                           + _s_curve(16, 8, (0.5, 0.7, 0.8, 0.9)) + "."),
        "rows": Threshold(8, "signature bytes per band", "8 one-byte rows make a band one 64-bit key."),
        "share": Threshold(0.001, "of records", "One near-copy in a thousand records: below it, "
                           "occasional templated records are normal and not worth a warning."),
    },
    fires=Example({"near_dup": True, "records": [
        {"text": "the quick brown fox jumps over the lazy dog near the quiet river bank today"},
        {"text": "the quick brown fox jumps over the lazy dog near the quiet river bank tonight"},
        {"text": "an entirely different sentence about training language models on clean data"}]}),
    passes=Example({"near_dup": True, "records": [
        {"text": "the quick brown fox jumps over the lazy dog near the quiet river bank today"},
        {"text": "an entirely different sentence about training language models on clean data"}]}),
    limits="Similarity is estimated (standard error about 0.04 near the threshold), so pairs just "
    "above or below it may be judged either way; a record is compared with the first record of "
    "each bucket it falls into, not with every member. Word shingles do not see character-level "
    "edits inside words as small. " + _NORMALISED,
)


def near_params() -> NearParams:
    """The near-duplicate measurement as the declared (or configured) thresholds set it."""
    t = NEAR_DUP.t
    return NearParams(shingle=int(t("shingle")), bins=int(t("bins")), bands=int(t("bands")),
                      rows=int(t("rows")), jaccard=float(t("jaccard")))


@check("near-duplicates", NEAR_DUP, after="duplicates")
def near_duplicates(s: Preflight) -> list[Finding] | Skip:
    nd, m = s.near, s.data
    if nd is None:
        return Skip(SkipKind.NOT_REQUESTED, "no --near-dup")
    share = nd.count / m.records if m.records else 0.0
    if nd.count == 0 or share <= NEAR_DUP.t("share"):
        return []
    first = ", ".join(f"{place(m, a)} ~ {place(m, b)} ({sim:.2f})" for a, b, sim in nd.examples)
    more = ", ..." if nd.count > len(nd.examples) else ""
    loc = location(m, nd.examples[0][0]) if nd.examples else location(m, None)
    return [NEAR_DUP.finding(loc, count=nd.count, share=share, n=m.records, clusters=nd.clusters,
                             first=first + more, candidates=nd.candidates, verified=nd.verified)]


# ---------------------------------------------------------------- train/eval contamination

_CONTAM_THRESHOLDS = {
    "fail_share": Threshold(0.01, "of eval records", "At 1 % leaked, a model that memorised the "
                            "leaked items gains up to a point of accuracy for nothing: the size of "
                            "the gaps papers report between models. Any smaller leak is still a WARN."),
    "ngram": Threshold(13, "words", "The n-gram length of benchmark decontamination since GPT-3 "
                       "(Brown et al. 2020): long enough that a shared 13-gram is almost never "
                       "a coincidence in natural text."),
    "max_eval_ngrams": Threshold(10_000_000, "n-grams", "12 bytes each, 120 MB: a 100,000-record "
                                 "eval set of 100-word records; more suggests a training corpus "
                                 "passed as --eval."),
}

_CONTAM_WHY = ("Eval records seen in training are answered from memory: every later eval number on "
               "that set overstates what the model learned, and comparisons between checkpoints or "
               "models are skewed by how often each saw the leaked items.")
_CONTAM_FIX = ("Remove the listed training records (or every training record sharing an n-gram "
               "with the eval set), or drop the leaked items from the eval set and say so when "
               "reporting it.")
_CONTAM_LIMITS = ("A record shorter than the n-gram length is matched only as a whole (equal "
                  "normalised text). Common boilerplate (licences, templates) shared by both sets is "
                  "reported as a leak, as benchmark decontamination reports it. " + _NORMALISED)
_EVIDENCE = ("{leaked} of {eval_records} eval records ({share:.2%}) appear in the training data "
             "({leaked_exact} as an equal text, the rest by a shared {limit_ngram:.0f}-word n-gram); "
             "{train_records} training records carry eval text; first: {first}")
_LEAK = [{"text": "what is the boiling point of water at sea level in degrees celsius it is one hundred"}]
_CLEAN = [{"text": "name the largest planet in the solar system it is jupiter by a wide margin indeed"}]
_TRAIN = [{"text": "What is the boiling point of water at sea level, in degrees Celsius? It is one hundred."},
          {"text": "an unrelated training record about something else entirely"}]

CONTAMINATION = rule(
    id="TP-PRE-EVAL-CONTAMINATION", level=Level.FAIL, group=G,
    title="Evaluation records leaked into the training data.",
    evidence=_EVIDENCE,
    summary="More than the declared share of the `--eval` set's records appear in the training "
    "data: equal after normalisation, or sharing a 13-word n-gram.",
    why=_CONTAM_WHY, fix=_CONTAM_FIX, thresholds=_CONTAM_THRESHOLDS, limits=_CONTAM_LIMITS,
    fires=Example({"records": _TRAIN, "eval": _LEAK + _CLEAN}),
    passes=Example({"records": _TRAIN[1:], "eval": _LEAK + _CLEAN}),
)

OVERLAP = rule(
    id="TP-PRE-EVAL-OVERLAP", level=Level.WARN, group=G,
    title="Some evaluation records appear in the training data.",
    evidence=_EVIDENCE,
    summary="A few `--eval` records (up to TP-PRE-EVAL-CONTAMINATION's share) appear in the "
    "training data.",
    why=_CONTAM_WHY, fix=_CONTAM_FIX, limits=_CONTAM_LIMITS,
    fires=Example({"records": _TRAIN, "eval": _LEAK + [
        {"text": f"held out question number {i} with its own distinct answer {i}"} for i in range(150)]}),
    passes=Example({"records": _TRAIN[1:], "eval": _LEAK + _CLEAN}),
)


def contamination_params() -> tuple[int, int]:
    """(n-gram length, the eval index's cap) as declared or configured."""
    return int(CONTAMINATION.t("ngram")), int(CONTAMINATION.t("max_eval_ngrams"))


def eval_place(s: Preflight, w: int) -> str:
    fi, pos = unpack(w)
    return f"{Path(s.eval_files[fi]).name}:{pos}"


@check("contamination", CONTAMINATION, OVERLAP, after="near-duplicates")
def contamination(s: Preflight) -> list[Finding] | Skip:
    c, m = s.contamination, s.data
    if c is None:
        return Skip(SkipKind.NOT_REQUESTED, "no --eval")
    if c.eval_records == 0:
        return Skip(SkipKind.NO_DATA, "the eval set holds no records")
    if c.leaked == 0:
        return []
    share = c.leaked / c.eval_records
    r: Any = CONTAMINATION if share > CONTAMINATION.t("fail_share") else OVERLAP
    first = ", ".join(f"{place(m, t)} = {eval_place(s, e)} ({how})" for t, e, how in c.examples)
    more = ", ..." if c.train_records > len(c.examples) else ""
    loc = location(m, c.examples[0][0]) if c.examples else Location(m.path)
    return [r.finding(loc, leaked=c.leaked, eval_records=c.eval_records, share=share,
                      leaked_exact=c.leaked_exact, train_records=c.train_records, train_exact=c.train_exact,
                      first=first + more, limit_ngram=CONTAMINATION.t("ngram"),
                      limit_fail_share=CONTAMINATION.t("fail_share"))]


def new_eval_index(offset: int = 0) -> EvalIndex:
    ngram, cap = contamination_params()
    return EvalIndex(ngram, cap, offset)
