"""I-HallA v1.0 (Lim et al., AAAI 2025): text-to-image prompts with multiple-choice questions.

The release (kaist-cvml/I-HallA-v1.0, ``data/``) is spreadsheets, read with openpyxl:

* ``GPT4o_QA_<history|science>_mod_cois.xlsx`` - sheet ``Sheet1``, a header row, then one
  question per row: index, CoI, question, the choices as ONE string (``"A) ...\\nB) ..."``),
  the answer (a string whose first character is the letter: ``"B"``, ``"B) text"``; ``"(B)"``
  is accepted too). 100 prompts per domain, 5 questions each.
* ``captions.xlsx`` - one sheet per domain (``history``, ``science``): index, caption (the
  text-to-image prompt). Prompts are joined to questions by index.

``path`` may be the folder holding them (or the repository root with ``data/``), one QA
spreadsheet (its ``captions.xlsx`` beside it), or a JSON/JSONL file of rows ``{"id", "prompt",
"category"?, "questions": [{"question", "choices": [...] | "A) ...", "answer"}]}``.

Ids are namespaced per domain (``ihalla_history_1``, ``ihalla_science_1``): the two files
number their prompts independently. Classes = the domain.

Scoring follows the official ``agents/EvaluationAgent.py``: the judge sees the image, the
question and the options plus an added "E) None of the above" (the official instruction
offers it for every question), answers one letter, and a question is correct when the letter
equals the answer's; a domain's score is correct answers / (5 x prompts), i.e. the mean of
the per-prompt accuracy S_i over prompts with five questions.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Sequence
from pathlib import Path

from orig_local.evaluation.items import BenchmarkFormatError, BenchmarkItem, Question
from orig_local.evaluation.loaders import Loaded

QA_FILE = re.compile(r"^GPT4o_QA_(?P<domain>[A-Za-z]+)_mod_cois\.xlsx$", re.IGNORECASE)
CAPTIONS = "captions.xlsx"
NONE_OPTION = "None of the above"
QUESTIONS_PER_PROMPT = 5


# --------------------------------------------------------------------------- choices and answers


_LINE_MARKER = re.compile(r"^\(?([A-Za-z])(?:\)|[.:](?=\s|$))\s*(.*)$")
# Inside one line only a closed bracket marks an option ("B)", "(B)"): "Vitamin B: thiamine" and
# "D. melanogaster" are option text, not options B and D.
_INLINE_MARKER = r"(?:^|(?<=\s))\(?{letter}\)"
_LEFTOVER = {"-", "--", "*", "•"}  # a stray bullet line the spreadsheet kept


def parse_choices(text: str, where: str = "") -> list[str]:
    """``"A) Carbon\\nB) Hydrogen\\nC) Oxygen"`` -> ``["Carbon", "Hydrogen", "Oxygen"]``.

    Options start at line starts (the release writes one option per line), marked ``A)``,
    ``(A)``, ``A.`` or ``A:`` in either case, in order A, B, C...; a line without a marker
    continues the option above it, a leftover ``-`` line is dropped. A choices string on one
    line is split at ``B)`` / ``(B)`` markers only. Anything else (fewer than two options,
    letters out of order, text before ``A``, an empty option) is an error - a choices string is
    never split into characters, nor at a letter inside an option's text.
    """
    text = str(text).strip()
    options = _by_lines(text, where)
    if options is None:
        options = _inline(text, where)
    for k, option in enumerate(options):
        if not option:
            raise BenchmarkFormatError(f"{where}: option {string.ascii_uppercase[k]} is empty in {text[:120]!r}")
    return options


def _by_lines(text: str, where: str) -> list[str] | None:
    """Options from line-start markers; None when the text does not have two such lines."""
    lines = [ln.strip() for ln in text.splitlines()]
    options: list[str] = []
    for line in lines:
        if not line or line in _LEFTOVER:
            continue
        m = _LINE_MARKER.match(line)
        if m and len(options) < 26 and m.group(1).upper() == string.ascii_uppercase[len(options)]:
            options.append(m.group(2).strip())
        elif options:
            options[-1] = f"{options[-1]} {line}".strip()  # an option's text over two lines
        else:
            return None  # text before option A: not this layout
    return options if len(options) >= 2 else None


def _inline(text: str, where: str) -> list[str]:
    starts: list[tuple[int, int]] = []  # (marker start, text start) per option
    pos = 0
    for letter in string.ascii_uppercase:
        m = re.compile(_INLINE_MARKER.format(letter=f"[{letter}{letter.lower()}]")).search(text, pos)
        if m is None:
            break
        starts.append((m.start(), m.end()))
        pos = m.end()
    if len(starts) < 2 or starts[0][0] != 0:
        raise BenchmarkFormatError(f"{where}: cannot read options A), B), ... from choices {text[:120]!r}")
    return [text[begin:(starts[k + 1][0] if k + 1 < len(starts) else len(text))].strip()
            for k, (_, begin) in enumerate(starts)]


def _as_choices(value, where: str) -> list[str]:
    if isinstance(value, str):
        return parse_choices(value, where)
    if isinstance(value, (list, tuple)) and len(value) >= 2 and all(isinstance(c, (str, int, float)) for c in value):
        return [str(c).strip() for c in value]
    raise BenchmarkFormatError(f"{where}: choices must be a list or an 'A) ... B) ...' string, not {value!r}")


_LETTER = re.compile(r"^\(?\s*([A-Za-z])\s*(?:[\).:]|\s|$)")


def answer_letter(answer, choices: list[str], where: str) -> str:
    """The answer's letter from the forms the release uses: ``"B"``, ``"b"``, ``"B) text"``,
    ``"(B)"``, ``"B."``; also a 0-based index or the exact option text."""
    letters = string.ascii_uppercase[: len(choices)]
    if isinstance(answer, bool):
        raise BenchmarkFormatError(f"{where}: answer {answer!r} is not an option letter")
    if isinstance(answer, int) and 0 <= answer < len(choices):
        return letters[answer]
    text = str(answer).strip()
    for letter, choice in zip(letters, choices, strict=True):
        if choice.strip().lower() == text.lower() and len(text) > 1:
            return letter
    m = _LETTER.match(text)
    if m:
        label, rest = m.group(1).upper(), text[m.end():].strip().lower()
        same = [lt for lt, choice in zip(letters, choices, strict=True) if rest and choice.strip().lower() == rest]
        if label in letters and (not rest or not same or label in same):
            return label
        if len(same) == 1:  # "E) None of the above" where the options already end in it as D
            return same[0]
    raise BenchmarkFormatError(f"{where}: answer {answer!r} is not one of the options {', '.join(letters)}")


def with_none_option(choices: list[str]) -> list[str]:
    """The official evaluation prompt lets the model answer "None of the above" (E)."""
    if any(c.strip().rstrip(".").lower() == NONE_OPTION.lower() for c in choices):
        return list(choices)
    return list(choices) + [NONE_OPTION]


# --------------------------------------------------------------------------- spreadsheets


class _Files:
    """Each file read once, its sha256 kept: a load parses and hashes the same bytes (the
    run's binding), and captions.xlsx is opened once for every domain's sheet."""

    def __init__(self) -> None:
        self.blobs: dict[Path, bytes] = {}

    def read(self, path: Path) -> bytes:
        if path not in self.blobs:
            self.blobs[path] = path.read_bytes()
        return self.blobs[path]

    def hashes(self, root: Path) -> dict[str, str]:
        return {str(f.relative_to(root)): hashlib.sha256(b).hexdigest() for f, b in sorted(self.blobs.items())}


def _workbook(path: Path, files: _Files):
    try:
        import openpyxl
    except ImportError as exc:  # pragma: no cover - the eval extra installs it
        raise BenchmarkFormatError("reading I-HallA spreadsheets needs openpyxl: pip install 'orig-local[eval]'") from exc
    import io
    import zipfile

    try:
        return openpyxl.load_workbook(io.BytesIO(files.read(path)), read_only=True, data_only=True)
    except (zipfile.BadZipFile, OSError, KeyError, ValueError) as exc:
        raise BenchmarkFormatError(f"{path}: not a readable .xlsx spreadsheet ({type(exc).__name__}: {exc})") from exc


def _is_index(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return float(value).is_integer()
    return isinstance(value, str) and value.strip().isdigit()


def _index(value) -> str:
    return str(int(float(value))) if not isinstance(value, str) else value.strip()


def _sheet_rows(path: Path, sheet: str | None, files: _Files) -> list[tuple[int, tuple]]:
    """(spreadsheet row number, values) of ``sheet``'s data rows (default ``Sheet1``, else the
    first sheet; by name, any case), without the header row and without empty rows."""
    wb = _workbook(path, files)
    try:
        names = {n.lower(): n for n in wb.sheetnames}
        if sheet is None:
            ws = wb[names["sheet1"]] if "sheet1" in names else wb[wb.sheetnames[0]]
        elif sheet.lower() in names:
            ws = wb[names[sheet.lower()]]
        else:
            raise BenchmarkFormatError(f"{path}: no sheet {sheet!r} (sheets: {', '.join(wb.sheetnames)})")
        rows = [(n, r) for n, r in enumerate(ws.iter_rows(values_only=True), 1)
                if any(c not in (None, "") for c in r)]
    finally:
        wb.close()
    if rows and not _is_index(rows[0][1][0] if rows[0][1] else None):
        rows = rows[1:]  # the header row pandas wrote (data_index, cois, question, choices, answer)
    return rows


def _domain_files(path: Path) -> tuple[dict[str, Path], Path]:
    """QA spreadsheets by domain, and the folder expected to hold captions.xlsx."""
    if path.is_file():
        m = QA_FILE.match(path.name)
        if not m:
            raise BenchmarkFormatError(f"{path}: an I-HallA spreadsheet is named GPT4o_QA_<domain>_mod_cois.xlsx")
        return {m.group("domain").lower(): path}, path.parent
    for folder in (path, path / "data"):
        files = {m.group("domain").lower(): p for p in sorted(folder.glob("*.xlsx")) if (m := QA_FILE.match(p.name))}
        if files:
            return files, folder
    raise BenchmarkFormatError(f"no GPT4o_QA_<history|science>_mod_cois.xlsx in {path} (or {path / 'data'})")


def _captions(folder: Path, domain: str, files: _Files) -> dict[str, str]:
    path = folder / CAPTIONS
    if not path.is_file():
        raise BenchmarkFormatError(f"{path} not found: the I-HallA prompts come from captions.xlsx "
                                   "(one sheet per domain: index, caption)")
    out = {}
    for _, r in _sheet_rows(path, domain, files):
        if len(r) < 2 or r[1] in (None, ""):
            continue
        out[_index(r[0])] = str(r[1]).strip()
    return out


def _load_xlsx(path: Path, none_option: bool, files: _Files) -> list[BenchmarkItem]:
    qa_files, folder = _domain_files(path)
    items: list[BenchmarkItem] = []
    for domain, qa in qa_files.items():
        grouped: dict[str, list[tuple]] = {}
        for n, r in _sheet_rows(qa, None, files):
            r = tuple(r) + (None,) * max(0, 5 - len(r))
            if not _is_index(r[0]):
                raise BenchmarkFormatError(f"{qa.name} row {n}: index {r[0]!r} is not a number")
            grouped.setdefault(_index(r[0]), []).append((n, *r[:5]))
        captions = _captions(folder, domain, files)
        for idx, rows in grouped.items():
            if idx not in captions:
                raise BenchmarkFormatError(f"{qa.name}: prompt {idx} has no caption in {CAPTIONS} sheet {domain!r}")
            questions = []
            for k, (n, _, _coi, question, choices_text, answer) in enumerate(rows, 1):
                where = f"{qa.name} row {n}"
                if not question or choices_text is None or answer is None:
                    raise BenchmarkFormatError(f"{where}: question, choices and answer are all needed")
                choices = _as_choices(choices_text, where)
                choices = with_none_option(choices) if none_option else choices
                letter = answer_letter(answer, choices, where)  # "E) None of the above" is an answer
                questions.append(Question(id=f"q{k}", text=str(question).strip(), choices=choices,
                                          answer=letter))
            issues = [] if len(questions) == QUESTIONS_PER_PROMPT else [
                f"{len(questions)} questions (the release has {QUESTIONS_PER_PROMPT} per prompt)"]
            items.append(BenchmarkItem(id=f"ihalla_{domain}_{idx}", prompt=captions[idx], category=domain,
                                       questions=questions, issues=issues))
    return items


# --------------------------------------------------------------------------- JSON / JSONL


def _load_json(path: Path, none_option: bool, files: _Files) -> list[BenchmarkItem]:
    try:
        text = files.read(path).decode("utf-8")
        rows = [json.loads(ln) for ln in text.splitlines() if ln.strip()] if path.suffix == ".jsonl" else json.loads(text)
    except UnicodeDecodeError as exc:
        raise BenchmarkFormatError(f"{path}: not UTF-8 text; the I-HallA release's .xlsx spreadsheets "
                                   "are read by their .xlsx name") from exc
    except json.JSONDecodeError as exc:
        raise BenchmarkFormatError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(rows, list):
        raise BenchmarkFormatError(f"{path}: expected a JSON list of items")
    items = []
    for n, row in enumerate(rows):
        pid = str(row.get("id", n))
        prompt = row.get("prompt") or row.get("caption") or row.get("text_prompt")
        if not prompt:
            raise BenchmarkFormatError(f"{path}: item {pid} has no prompt")
        category = str(row.get("category", "ihalla"))
        questions = []
        for k, q in enumerate(row.get("questions") or row.get("qa") or [], 1):
            where = f"{path}: {pid}/q{k}"
            choices = _as_choices(q.get("choices"), where)
            choices = with_none_option(choices) if none_option else choices
            questions.append(Question(id=f"q{k}", text=str(q["question"]), choices=choices,
                                      answer=answer_letter(q["answer"], choices, where)))
        prefix = f"ihalla_{category.lower()}_" if "category" in row else "ihalla_"
        items.append(BenchmarkItem(id=f"{prefix}{pid}", prompt=prompt, category=category, questions=questions))
    return items


# --------------------------------------------------------------------------- entry points


def _files(path: Path) -> list[Path]:
    if path.suffix in (".json", ".jsonl"):
        return [path]
    files, folder = _domain_files(path)
    return sorted(files.values()) + ([folder / CAPTIONS] if (folder / CAPTIONS).is_file() else [])


def source(path: str | Path, **_ignored) -> dict:
    """The files a load reads, with their sha256 (binds a run folder to its data)."""
    path = Path(path)
    if not path.exists():
        raise BenchmarkFormatError(f"I-HallA data not found: {path}")
    root = path if path.is_dir() else path.parent
    return {"loader": "ihalla", "root": str(root),
            "files": {str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest() for f in _files(path)}}


def select(items: Sequence[BenchmarkItem], classes: Sequence[str] | None = None,
           include_others: bool = True) -> list[BenchmarkItem]:
    """The items of ``classes`` (the domains, any case); ``include_others`` has no meaning here."""
    from orig_local.evaluation.loaders import keep_classes

    return keep_classes(items, {c.lower() for c in classes} if classes else None, str.lower)


def load(path: str | Path, classes: list[str] | None = None, include_others: bool = True,
         none_option: bool = True) -> list[BenchmarkItem]:
    return select(load_all(path, none_option).items, classes, include_others)


def load_all(path: str | Path, none_option: bool = True) -> Loaded:
    """Every item, every domain, and the sha256 of every file (what :func:`source` records),
    from one read of each file."""
    path = Path(path)
    if not path.exists():
        raise BenchmarkFormatError(f"I-HallA data not found: {path}")
    files = _Files()
    if path.is_file() and path.suffix.lower() in (".json", ".jsonl"):
        items = _load_json(path, none_option, files)
    elif path.is_dir() or path.suffix.lower() == ".xlsx":
        items = _load_xlsx(path, none_option, files)
    else:
        raise BenchmarkFormatError(f"{path}: I-HallA data is the release's .xlsx files (or our JSON/JSONL)")
    seen: set[str] = set()
    for it in items:
        if it.id in seen:
            raise BenchmarkFormatError(f"{path}: item id {it.id} appears twice")
        seen.add(it.id)
    root = path if path.is_dir() else path.parent
    return Loaded(items, source={"loader": "ihalla", "root": str(root), "files": files.hashes(root)})
