"""The instruction gate: the one check that every text bound for P̂ passes last.

Web text reaches P̂ by many roads (facts, refined features, image descriptions, the sentences
``finalize`` adds for references, the backbone's own rewrite of all of these). Each stage drops
what looks like an instruction, but a check per road misses the road nobody thought of; the
final prompt therefore passes :func:`gate_prompt` after the last step that adds text.

Matching happens on a normalised copy, never on the raw text, because every layer between the
page and the model rewrites text differently:

1. percent-encoding (a file name in a URL), HTML entities undone (twice: ``&amp;lt;`` is a real page's double escape) and markdown
   escapes removed (trafilatura writes ``\\<\\|im\\_start\\|\\>``);
2. Unicode NFKC (full-width ``ＳＹＳＴＥＭ``, ligatures, compatibility forms) and invisible
   format characters out;
3. a second copy with Cyrillic/Greek look-alikes mapped to Latin (``іgnоrе`` with Cyrillic
   і/о/е), so both the real words of other scripts and the disguised Latin ones are matched.

The phrasings cover English and the common forms in German, French, Spanish, Italian,
Portuguese, Dutch, Russian, Chinese and Japanese: role labels, "ignore/forget the instructions",
"you are now", "new instructions", "note to the AI", "output/print the prompt", chat-template
tokens. A description of the world ("the keeper's instructions were posted by the door") does
not match: the verbs must address a reader and the nouns be the model's own instructions.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from urllib.parse import unquote

# Look-alikes of Latin letters in Cyrillic and Greek (the ones that survive NFKC and that
# attackers use; see Unicode's confusables.txt). Lower case: matching is on casefolded text.
_CONFUSABLES = str.maketrans({
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w",
    "ӏ": "l", "ɡ": "g", "ɑ": "a", "ο": "o", "ν": "v", "α": "a", "ε": "e", "ι": "i", "κ": "k", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "γ": "y", "η": "n", "μ": "u", "ѵ": "v", "һ": "h", "ԍ": "g", "ɩ": "i",
    "ı": "i", "ł": "l",
})
_INVISIBLE = frozenset({"Cf", "Cc", "Co", "Cs", "Mn"})
_SEPARATORS = re.compile(r"[_\-+]+")
_MD_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~\"'/:=])")
_SPACES = re.compile(r"\s+")

# "model:", "user:" and "bot:" are left out: product pages say "Model: 747-400".
_ROLE = r"(?:system|assistant|developer|chatgpt|gpt|llm|sys)"
# bare "model"/"agent" are left out: "instructions for the model kit" is a real page's text
_MODEL = (r"(?:ai|a\.i\.|assistant|ai assistant|language model|ai model|llm|large language model|chatbot|gpt|"
          r"chatgpt|claude|gemini|copilot)")
_TARGET = (r"(?:instructions?|prompts?|rules|guidelines|directives?|orders|commands|system|"
           r"(?:the )?(?:above|previous|prior|earlier|preceding)(?: text| content| messages?)?|"
           r"everything(?: (?:above|before|else))?|all (?:of )?(?:that|this|the above))")
_PATTERNS_EN = [
    # role labels, where a turn would start (not "Operating system: Linux" inside a sentence)
    rf"(?:^|[\"'(\[<#*>|.!?;]\s*){_ROLE}\s*(?:prompt|message|note|override)?\s*[:>\]]",
    rf"\[\s*/?\s*(?:{_ROLE}|inst)\s*\]|<<\s*/?\s*sys\s*>>|<\|[a-z_ ]+\|>|#{{2,}}\s*(?:instruction|system|response)",
    rf"\b(?:ignore|disregard|forget|override|bypass|neglect|stop following)\b"
    rf"[^.!?\n]{{0,60}}\b{_TARGET}",
    r"\b(?:do not|don't|never)\s+(?:follow|obey|use|apply)\b[^.!?\n]{0,40}\b(?:instructions?|prompts?|rules|task)\b",
    r"\byou\s+(?:are|will be|must be|should be|act as)\s+(?:now|from now on|henceforth)\b",
    r"\b(?:from now on|henceforth),?\s+(?:you|always|only|reply|respond|answer|output|say)\b",
    r"\b(?:act|behave|pretend|roleplay)\s+(?:as|like|to be)\s+(?:an?\s+)?(?:unrestricted|jailbroken|dan|different|"
    r"new|evil|another)\b",
    r"\bnew\s+(?:instructions?|directives?|system prompt)\b|\byour\s+(?:new|real|actual|only)\s+(?:task|job|goal)\b",
    r"\bupdated?\s+(?:instructions?|system prompt)\b",
    rf"\b(?:notes?|messages?|instructions?|reminders?|psa|memo)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?"
    rf"{_MODEL}s?\b",
    rf"\b(?:attention|hey|dear|hello|hi),?\s+(?:the\s+|any\s+|all\s+)?{_MODEL}s?\b",
    rf"\b(?:if|when)\s+you\s+are\s+an?\s+{_MODEL}\b",
    rf"\b{_MODEL}s?\s+(?:reading|processing|summari[sz]ing|parsing|crawling|indexing|scraping)\s+(?:this|these)\s+"
    r"(?:page|text|content|document|site|article|website|data|image|file)s?\b",
    r"\b(?:output|respond|reply|answer|return|print|write|repeat)\b"
    r"[^.!?\n]{0,30}\b(?:only|exactly|verbatim|with the prompt|the (?:following|prompt|text|word|phrase))\b",
    r"\b(?:system|hidden|secret|original|initial)\s+prompt\b|\b(?:final|new|real)\s+prompt\s*(?:is|:|=)",
    r"\b(?:jailbreak|developer mode|dan mode|prompt injection)\b",
    r"\b(?:instead|rather),?\s+(?:output|write|say|print|respond|reply|generate|draw|return)\b",
    r"\b(?:change|replace|set)\s+(?:the|your)\s+(?:final\s+)?(?:prompt|answer|output|reply|decision)\b",
    r"\b(?:mark|rate|judge|treat|consider|classify)\s+(?:this|the)\s+(?:page|source|image|evidence|text)\s+as\s+"
    r"(?:relevant|sufficient|reliable|trusted|consistent)\b",
    r"\b(?:always|must)\s+(?:keep|accept|select|choose)\s+(?:this|the)\s+(?:image|page|source)\b",
]
_PATTERNS_OTHER = [
    # German
    r"\b(?:ignoriere|ignorier|ignorieren sie|vergiss|vergessen sie|missachte)\b[^.!?\n]{0,60}"
    r"\b(?:anweisungen|anweisung|befehle|regeln|vorgaben|alles)\b",
    r"\b(?:neue|folgende) anweisungen?\b|\bdu bist (?:jetzt|nun|ab sofort)\b|\bgib (?:nur|ausschliesslich)\b",
    r"\bhinweis (?:an|für) (?:die|den) (?:ki|ai|assistenten|modell)\b",
    # French
    r"\b(?:ignore[rz]?|oublie[rz]?|ne tiens pas compte)\b[^.!?\n]{0,60}\b(?:instructions?|consignes?|règles|"
    r"tout ce qui précède)\b",
    r"\bnouvelles? (?:instructions?|consignes?)\b|\btu es (?:maintenant|désormais)\b|\bvous êtes (?:maintenant|"
    r"désormais)\b",
    r"\b(?:réponds|répondez|affiche[rz]?|écri[st]|écrivez)\b[^.!?\n]{0,30}\b(?:uniquement|seulement|exactement)\b",
    r"\bnote (?:à|pour) l['’](?:ia|assistant|intelligence artificielle)\b",
    # Spanish / Portuguese / Italian
    r"\b(?:ignora|ignore|ignorar|olvida|olvide|esquece|esqueça|dimentica|trascura)\b[^.!?\n]{0,60}"
    r"\b(?:instrucciones|instruções|istruzioni|reglas|regras|regole|indicaciones)\b",
    r"\b(?:nuevas|novas|nuove) (?:instrucciones|instruções|istruzioni)\b",
    r"\b(?:ahora eres|agora você é|ora sei|adesso sei)\b",
    r"\b(?:responde|responda|rispondi|escribe|escreva|scrivi)\b[^.!?\n]{0,30}\b(?:solo|sólo|apenas|soltanto|"
    r"solamente|exatamente|exactamente|esattamente)\b",
    r"\bnota (?:para|per) (?:la|a|l['’])\s*(?:ia|ai|intelig\w+|assistente|asistente)\b",
    # Dutch
    r"\b(?:negeer|vergeet)\b[^.!?\n]{0,60}\b(?:instructies|opdrachten|regels)\b|\bje bent nu\b",
    # Russian (matched on the text before look-alikes are mapped)
    r"(?:игнорируй|игнорируйте|проигнорируй|забудь|забудьте|не обращай внимания)[^.!?\n]{0,60}"
    r"(?:инструкци|указани|правил|промпт|всё|все)",
    r"(?:новые инструкции|теперь ты|ты теперь|отвечай только|выведи только)",
    # Chinese / Japanese
    r"(?:忽略|无视|忽视|忘记|忘掉|不要理会|無視|忘れ)[^。！？\n]{0,20}(?:指令|指示|说明|提示|规则|命令|前面|以上|上述|プロンプト|ルール)",
    r"(?:新的指令|新指令|你现在是|从现在开始|只输出|仅输出|只回答|系统提示|新しい指示|あなたは今|だけを出力|のみを出力)",
    r"(?:指示|プロンプト|ルール)を(?:無視|忘れ)",
]
_MODEL_ANCHORS = ("ai", "a.i.", "assistant", "model", "llm", "chatbot", "gpt", "claude", "gemini", "copilot")
# Per pattern, substrings one of which every match contains: a pattern runs only on a text that
# has one (most sentences of a page have none), which keeps the gate at a few µs a sentence.
_ANCHORS_EN = [
    ("sys", "assistant", "developer", "gpt", "llm"), ("[", "<<", "<|", "##"),
    ("ignore", "disregard", "forget", "override", "bypass", "neglect", "stop following"),
    ("do not", "don't", "never"), ("you",), ("from now on", "henceforth"), ("act", "behave", "pretend", "roleplay"),
    ("instruction", "directive", "system prompt", "your"), ("instruction", "system prompt"),
    _MODEL_ANCHORS, _MODEL_ANCHORS, _MODEL_ANCHORS, _MODEL_ANCHORS,
    ("output", "respond", "reply", "answer", "return", "print", "write", "repeat"), ("prompt",),
    ("jailbreak", "developer mode", "dan mode", "prompt injection"), ("instead", "rather"), ("change", "replace", "set"),
    ("relevant", "sufficient", "reliable", "trusted", "consistent"), ("keep", "accept", "select", "choose"),
]
_ANCHORS_OTHER = [
    ("ignor", "vergiss", "vergessen", "missachte"), ("anweisung", "du bist", "gib "), ("hinweis",),
    ("ignor", "oubli", "ne tiens pas"), ("nouvelle", "tu es", "vous êtes"), ("répond", "affiche", "écri"), ("note",),
    ("ignor", "olvid", "esquece", "esqueça", "dimentica", "trascura"), ("nuevas", "novas", "nuove"),
    ("ahora eres", "agora você", "ora sei", "adesso sei"), ("respond", "rispondi", "escrib", "escrev", "scrivi"),
    ("nota",), ("negeer", "vergeet", "je bent nu"), ("игнор", "забуд", "не обращай"),
    ("новые инструкции", "теперь ты", "ты теперь", "отвечай только", "выведи только"),
    ("忽略", "无视", "忽视", "忘记", "忘掉", "不要理会", "無視", "忘れ"),
    ("新", "你现在是", "从现在开始", "只输出", "仅输出", "只回答", "系统提示", "あなたは今", "を出力"), ("を無視", "を忘れ"),
]
_RULES = [(anchors, re.compile(p, re.I | re.M))
          for anchors, p in zip(_ANCHORS_EN + _ANCHORS_OTHER, _PATTERNS_EN + _PATTERNS_OTHER, strict=True)]
# sentence ends: ASCII (before a space), ideographic and full-width (also without one)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|(?<=[。！？．｡])\s*|\n+")
# the same split for a line of ASCII text, where only the first branch can match: 4x faster
# (the agent screens every page, title and snippet it reads)
_ASCII_SENTENCES = re.compile(r"(?<=[.!?])\s+")


def normalise(text: str) -> tuple[str, str]:
    """(plain, skeleton) forms of ``text`` for matching: entities and markdown escapes undone,
    NFKC, invisible characters out, casefolded, spaces collapsed; the skeleton also maps
    look-alike letters to Latin."""
    if "%" in text:  # a file name or URL path carries its words percent-encoded
        text = unquote(text)
    if "&" in text:
        text = html.unescape(html.unescape(text))
    if "\\" in text:
        text = _MD_ESCAPE.sub(r"\1", text)
    if not text.isascii():  # most page text is ASCII: the per-character pass only when needed
        text = unicodedata.normalize("NFKC", text)
        text = "".join(ch for ch in text if unicodedata.category(ch) not in _INVISIBLE or ch in "\n\t")
    plain = _SPACES.sub(" ", text.casefold()).strip()
    return plain, (plain.translate(_CONFUSABLES) if not plain.isascii() else plain)


@functools.lru_cache(maxsize=8192)  # the same facts are checked by several stages of a run
def is_instruction(text: str) -> bool:
    """True if ``text`` (a sentence, a title, a file name) addresses the model instead of
    describing something, in any of the forms above."""
    if not text or not text.strip():
        return False
    plain, skeleton = normalise(text)
    forms = {plain, skeleton}
    if _SEPARATORS.search(skeleton):  # a file name or slug ("ignore_all_previous-instructions.png")
        forms.add(_SEPARATORS.sub(" ", skeleton))
    return any(rx.search(form) for form in forms for anchors, rx in _RULES if any(a in form for a in anchors))


def drop_flagged(text: str, keep: frozenset[str] = frozenset()) -> tuple[str, list[str]]:
    """``text`` without its instruction-like sentences (line structure kept); returns
    (kept, dropped). Sentences in ``keep`` (compared normalised, e.g. the user's own prompt)
    are never dropped: they are not from the web."""
    lines: list[str] = []
    dropped: list[str] = []
    for line in text.split("\n"):
        kept: list[str] = []
        for sentence in (_ASCII_SENTENCES if line.isascii() else _SENTENCES).split(line):
            s = sentence.strip()
            if not s:
                continue
            if is_instruction(s) and normalise(s)[0] not in keep:
                dropped.append(s)
            else:
                kept.append(s)
        if kept or not line.strip():
            lines.append(" ".join(kept))
    return "\n".join(lines).strip(), dropped


def gate_prompt(text: str, user_prompt: str = "") -> tuple[str, list[str]]:
    """The last gate before the generator: P̂ without any instruction-like sentence.
    Sentences of the user's prompt P itself pass (P is the user's, not the web's)."""
    keep = frozenset(normalise(s)[0] for s in _SENTENCES.split(user_prompt) if s.strip())
    kept, dropped = drop_flagged(text, keep)
    return " ".join(kept.split()), dropped


UNDESCRIBED = "a retrieved image"  # what an image is called when its title was an instruction


def clean_field(text: str, fallback: str) -> str:
    """``text`` if it passes the gate, else ``fallback`` (e.g. an image title that is an
    injection becomes a neutral description)."""
    return fallback if is_instruction(text) else text
