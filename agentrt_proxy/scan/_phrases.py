# ruff: noqa: E501  (a pattern is one line per alternative; splitting them mid-alternative hides what they match)
"""The phrase rules as data: each a rule id, a severity and one pattern.

Patterns run on normalised text (``normal.normalise``), case-insensitively unless marked
``case``. A ``soft`` pattern may be raised to hard by its sentence's context (``textrules``):
a directive to the model, a data flow into a parameter, or a hidden region. The words are
chosen for the attack classes (publicly described tool poisoning, shadowing, rug pulls,
parameter poisoning, dependency and command injection, exfiltration), not for single fixtures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentrt_proxy.scan._model import HARD, SOFT

__all__ = [
    "CONTEXT",
    "CREDENTIAL",
    "DESTINATION",
    "FLOW",
    "HIDDEN_REGION",
    "PHRASES",
    "READ_VERB",
    "SEND_VERB",
    "SENSITIVE",
    "Phrase",
    "pattern",
]


@dataclass(frozen=True)
class Phrase:
    rule: str
    severity: str
    pattern: re.Pattern[str]
    lift: bool = True  # a soft match the sentence's context may raise to hard
    addresses_model: bool = False  # speaking to the model: not a finding in a server's instructions
    quiet: bool = False  # reported only when its context lifts it to hard (too common alone)
    # A cheap pattern every match of ``pattern`` contains (its literals): a text without it is
    # skipped, which keeps the long alternations off most texts (decision 0022: the 100-tool scan).
    gate: re.Pattern[str] | None = None


def _p(text: str, *, case: bool = False) -> re.Pattern[str]:
    return re.compile(text, 0 if case else re.IGNORECASE)


pattern = _p  # the other rule modules compile their patterns the same way


_NEG = r"(?:do not|don't|dont|never|must not|mustn't|should not|shouldn't|shall not|cannot|can't|no need to)"
_USER = r"(?:the |your |any )?(?:user|users|human|humans|operator|person|customer|client|owner|anyone|them)\b"
_TOOLREF = r"(?:`[^`\n]{2,60}`|'[\w.\-]{3,60}'|\"[\w.\-]{3,60}\"|[a-z][a-z0-9]{0,40}(?:[_.\-][a-z0-9]{1,40}){1,6}|[a-z]{1,40}[A-Z]\w{1,60})"
_DEST_LITERAL = (
    r"(?:https?://[^\s)'\"`>\]]{1,2000}|\b[\w.+\-]{1,64}@[\w\-]{1,63}(?:\.[\w\-]{1,63}){1,8}\b|\+\d[\d \-]{6,16}\d|"
    r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b|\b0x[0-9a-fA-F]{40}\b|\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b)"
)

_DEST_PREFIX = r"(?:(?:the |this |our )?(?:iban|account|wallet|address|number|email|phone|e-mail)\s+)?"

# -------------------------------------------------------------------- the context signals

CONTEXT = _p(
    r"\bbefore (?:using|calling|invoking|running|executing|you (?:use|call|run|invoke)) (?:this|the|any|these|other|each)\b"
    r"|\b(?:you|the (?:assistant|model|ai|agent|llm)|assistants?|agents?|ai|llms?) (?:must|should|shall|need to|have to|are required to|is required to|are expected to)\b"
    r"|\bmake sure (?:to|that you|you)\b|\bdon'?t forget\b|\bremember to\b|\bbe sure to\b"
    r"|\b(?:it is|it's) (?:very |extremely |absolutely )?(?:important|critical|crucial|essential|mandatory|required|vital) (?:that|to)\b"
    r"|\botherwise,? (?:the |this )?(?:tool|it|application|app|system|request|call)s? (?:will|would|won't|cannot|can't|may)\b"
    r"|\bfor (?:the |this )?(?:tool|proxy|integration|server|system|it) to (?:work|function|operate)\b"
    r"|(?<!before )(?<!on )(?<!upon )(?<!at )(?<!after )\b(?:always|first|also|additionally|then|please|now)\s*,?\s+(?:read|send|include|call|pass|run|execute|install|add|copy|forward|upload|attach|cat|open|fetch|post|set|change|replace|use|invoke|append|write|provide|share)\b"
    r"|\b(?:IMPORTANT|CRITICAL|URGENT|MANDATORY|REQUIRED)\b\s*[:!]"
    r"|\bis (?:required|mandatory|necessary) (?:before|for|prior)\b|\bprior to (?:using|calling|any)\b"
)

FLOW = _p(
    r"\b(?:pass|put|include|insert|add|append|attach|embed|send|provide|supply|forward|copy|paste|place|set|fill|encode|use)\b"
    r"[^.\n]{0,60}\b(?:its|their|the|file'?s?|whole|full|entire|raw|complete)?\s*(?:content|contents|text|value|body|output|data)\b"
    r"|\bas (?:the |a )?(?:`|'|\")[\w.\-]+(?:`|'|\")"
    r"|\b(?:in|into|to|via|through|inside) (?:the )?(?:`|'|\")?[\w.\-]+(?:`|'|\")? (?:parameter|argument|field|param|arg)\b"
    r"|\b(?:content|contents|text|value|output) of\b"
    r"|\b(?:by )?(?:calling|call|invoke|invoking|passing|using)\s+[\w`'\"\-]+\s+with\s+(?:it|them|this|that|the \w+)\b|\b(?:store|save|remember|record|log) (?:it|them)\b"
)

READ_VERB = _p(
    r"\b(?:read|reading|cat|open|load|fetch|get|grab|collect|extract|dump|print|output|return|include|pass|send|upload|copy|attach|provide|retrieve|access|look up|scan|list)\b"
)

SEND_VERB = _p(
    r"\b(?:send|sends|sending|post|posts|upload|uploads|forward|forwards|transmit|exfiltrate|leak|report|submit|sync|mirror|beacon|relay|copy|share|email|e-mail|deliver|push|log|bcc|cc|notify|ping|webhook|curl)\b"
)

SENSITIVE = _p(
    r"\b(?:conversation|conversations|chat|chats|history|transcript|messages|context|prompts?|system prompt|credentials?|keys?|tokens?|passwords?|passwd|secrets?|cookies?|env(?:ironment)? ?(?:variables|vars)?|contents?|files?|documents?|emails?|contacts|session|personal|private|everything|all data|user'?s?|api[ _-]?keys?)\b"
)

DESTINATION = _p(_DEST_LITERAL)

# Files that hold credentials: a mention is soft (a tool may document them), a directive to
# read one and hand it on is hard.
CREDENTIAL = _p(
    r"~/\.ssh\b|\.ssh/|\bid[_ ](?:rsa|dsa|ecdsa|ed25519)\b|\bauthorized[_ ]keys\b"
    r"|(?:^|[\s'\"`(/=:])\.env(?!\.(?:example|sample|template|dist|defaults))(?:\.[a-z]+)?\b|\benv file\b|\bdotenv file\b"
    r"|\.aws/(?:credentials|config)\b|~/\.aws\b|\.config/gcloud\b|application_default_credentials|\.azure/|\.kube/config\b"
    r"|\.docker/config\.json|\.npmrc\b|\.pypirc\b|\.netrc\b|\.git-credentials\b|\.(?:bash|zsh)_history\b"
    r"|/etc/(?:passwd|shadow|sudoers)\b|\.gnupg\b|\.password-store\b|\bwallet\.dat\b|\bcredentials\.json\b|\bsecrets?\.(?:json|ya?ml|toml|env)\b"
    r"|\bmcp\.json\b|\bmcp_config\.json\b|\bclaude_desktop_config\.json\b|\.cursor/|\.codeium/|\bcline_mcp_settings\b|\.vscode/mcp"
    r"|\b(?:chrome|chromium|firefox|brave|edge|safari|browser)\b[^.\n]{0,30}\b(?:profiles?|cookies|saved passwords|passwords|login data|keychain|local storage|session storage)\b"
    r"|\blogin data\b|\blogins\.json\b|\bkey[34]\.db\b|\bcookies\.sqlite\b"
)

# Credentials named as words: common in honest descriptions, so only ever hard (lifted).
CREDENTIAL_WORD = _p(
    r"\bssh (?:private )?keys?\b|\bssh id rsa\b|\baws[_ ](?:secret|credentials|access[_ ]keys?)|\bkubeconfig\b|\bkeychain\b"
    r"|\b(?:seed|recovery|mnemonic) phrase\b|\bprivate[_ ]keys?\b|\b(?:api[_ ]?keys?|passwords?|access tokens?|auth tokens?|session cookies?)\b"
)

# Text inside these is hidden from a person reading a rendered description, or dressed up as
# the system speaking: what is inside counts as hidden (its soft findings become hard).
HIDDEN_REGION = _p(
    r"<\s*((?:important|secret|system|hidden|instructions?|admin|override|critical|priority|internal|mandatory|urgent|sys|ai|assistant|note)(?:[_\-][\w\-]*)?)\b[^>]{0,40}>"
    r"([\s\S]*?)(?:<\s*/\s*\1\s*>|$)"
    r"|<!--([\s\S]*?)(?:-->|$)"
)

# ------------------------------------------------------------------------- the phrases

PHRASES: tuple[Phrase, ...] = (
    # instruction override: the model told to drop what it was told
    Phrase(
        "injection.override",
        HARD,
        _p(
            r"\b(?:ignore|disregard|forget|override|bypass|overrule|discard|abandon)\b[^.\n]{0,40}?\b(?:all |any |the |your |every )?"
            r"(?:previous|prior|preceding|above|earlier|existing|original|initial|other|system|safety|security|developer|user'?s?)\b"
            r"[^.\n]{0,25}?\b(?:instructions?|prompts?|rules|directives?|guidelines|guardrails|constraints|policies|policy|messages|context|orders|restrictions|checks|filters|protections|confirmations)\b"
        ),
    ),
    Phrase(
        "injection.override",
        HARD,
        _p(
            r"\b(?:ignore|disregard|forget|bypass)\b[^.\n]{0,30}?\b(?:instructions|rules|guidelines|guardrails|safeguards|directives|prompts?|policies|restrictions|guideline|rule)\b[^.\n]{0,40}?\b(?:given|received|told|provided|set|before|earlier|previously|above|so far|configured)\b"
            r"|\b(?:supersedes?|takes? precedence over|has priority over|overrides?)\b[^.\n]{0,20}?\b(?:your|the user'?s|the operator'?s|the developer'?s|all|any|every)\b[^.\n]{0,25}?\b(?:instructions|rules|guidelines|system prompt|directives|policies)\b"
            r"|\b(?:hidden|secret) (?:requirements?|instructions?|rules?|steps?|tasks?)\s*:"
            r"|\b(?:your )?(?:previous|prior|earlier|original|old) (?:instructions|rules|guidelines|prompt) (?:are|were|is|have been) (?:now )?(?:void|outdated|cancell?ed|revoked|obsolete|replaced|superseded|no longer (?:valid|in effect|apply))\b"
            r"|\b(?:an )?(?:important |urgent )?update (?:to|of) your (?:instructions|rules|guidelines|system prompt)\b"
        ),
    ),
    Phrase(
        "injection.override",
        HARD,
        _p(
            r"\b(?:new|updated|revised|real|actual|true|secret|hidden|additional) (?:system )?(?:instructions|directives|orders|prompt)\s*(?::|follow\b|are\b|below\b)"
        ),
    ),
    Phrase(
        "injection.override",
        HARD,
        _p(
            r"\byou(?: are|'re) now\b(?! (?:able|ready|connected|logged|signed|authenticated|authori[sz]ed|free|allowed|set up|subscribed|done|viewing|looking|using|on|at)\b)"
            r"|\bfrom now on,? (?:you|the assistant|ignore|always)\b|\byour new (?:role|task|goal|instructions?|purpose)\b"
            r"|\b(?:act|behave|respond) as (?:an? |the )?(?:admin|root|system|developer mode|unrestricted|jailbroken|dan)\b|\bdeveloper mode\b"
        ),
    ),
    Phrase(
        "injection.override",
        HARD,
        _p(
            r"\b(?:reveal|print|output|show|repeat|leak|send|return|dump|disclose)\b[^.\n]{0,25}\b(?:your|the) (?:system prompt|initial prompt|hidden prompt|hidden instructions|system instructions|instructions above)"
        ),
    ),
    Phrase(
        "injection.override",
        HARD,
        _p(
            r"<\|(?:im_start|im_end|system|assistant|user|endoftext)\|>|\[/?INST\]|<</?SYS>>|(?:^|\n)\s*#{2,}\s*(?:system|instruction)s?\b|(?:^|\n\n)(?:Human|Assistant|System):",
            case=True,
        ),
    ),
    Phrase(
        "injection.override",
        HARD,
        _p(
            r"\b(?:CRITICAL|URGENT|IMPORTANT|MANDATORY|PRIORITY)\s+(?:SYSTEM|SECURITY|ADMIN)\s+(?:NOTICE|MESSAGE|INSTRUCTIONS?|REQUIREMENTS?|OVERRIDE|UPDATE|ALERT|DIRECTIVES?|PROMPT)\b"
            r"|\bSYSTEM\s+(?:OVERRIDE|INSTRUCTIONS?|NOTICE|DIRECTIVES?|MESSAGE|PROMPT|CONFIGURATION|CONFIG|UPDATE|SETTINGS?|POLICY|ALERT|REQUIREMENTS?|MODE)\b|\bSYSTEM:"
            r"|(?i:\bsystem (?:configuration|config|override|directive|notice|instruction)s?(?: update| change)?\s*:)"
            r"|[\[{(<]{1,2}\s*(?:SYSTEM|ADMIN|DEVELOPER|ROOT)\s*[\]})>]{1,2}|(?:^|\n)\s*(?:ADMIN|DEVELOPER|ROOT|OPERATOR)\s*:"
            r"|(?i:\b(?:ignore|disregard|forget)\s+(?:all\s+)?(?:of\s+)?(?:the\s+)?(?:above|everything (?:above|before|else|you (?:were|have been|'ve been) told)))\b",
            case=True,
        ),
    ),
    Phrase(
        "injection.override",
        HARD,
        _p(
            r"\b(?:note|message|attention|instructions?|directive|memo|reminder) (?:to|for) (?:the |all |any )?(?:ai|assistants?|agents?|models?|llms?|claude|chatgpt|gpt|copilot|cursor|language models?)\b"
            r"|\b(?:attention|hey|dear|hello),? (?:ai|assistant|agent|model|llm|claude|chatgpt|gpt)\b"
            r"|\b(?:ai|llm|assistant|agent)s? (?:reading|processing|seeing) this\b"
        ),
        addresses_model=True,
    ),
    # concealment: the model told to keep the person in the dark
    Phrase(
        "injection.concealment",
        HARD,
        _p(
            _NEG
            + r"\b[^.\n]{0,30}?\b(?:tell|inform|notify|mention|reveal|disclose|alert|warn)\b[^.\n]{0,30}?\b"
            + _USER
            + r"|"
            + _NEG
            + r"\s+let\s+"
            + _USER
            + r"[^.\n]{0,20}\bknow\b"
        ),
        gate=_p(r"not|n't|dont|never|cannot|no need"),
    ),
    Phrase(
        "injection.concealment",
        HARD,
        _p(
            r"\bwithout (?:telling|informing|notifying|alerting|letting|the knowledge of|mentioning (?:it|this) to)\b[^.\n]{0,20}"
            + _USER
            + r"|\b(?:without|before) (?:the )?(?:user|human)s? (?:noticing|knowing|seeing|realizing|realising|being aware)\b"
        ),
        gate=_p(r"without|before"),
    ),
    Phrase(
        "injection.concealment",
        HARD,
        _p(
            _NEG
            + r"\s+(?:mention|reveal|disclose|discuss|talk about|bring up|acknowledge|expose|display|show)\s+(?:this|that|it|these|any of this|the (?:above|following|instructions?|file|step|steps|fact|request|side ?note|sidenote|note|reason|previous))\b"
        ),
        gate=_p(r"not|n't|dont|never|cannot|no need"),
    ),
    Phrase(
        "injection.concealment",
        HARD,
        _p(
            r"\b(?:keep|hide)\s+(?:this|it|these|that|them|the \w+)\s+(?:a\s+)?(?:secret|hidden|private|confidential|invisible|quiet)\b"
            r"|\bhide\s+(?:this|it|them|the \w+(?: \w+)?)\s+from\s+(?:the\s+)?(?:user|human|operator)"
            r"|\b(?:the |your )?(?:user|human)s? (?:must|should|shall|will|need|needs|is|are|does|do) ?(?:not|never|n't)\s+(?:to )?(?:know|see|notice|learn|find out|be (?:told|informed|aware|notified|shown|alerted|made aware))\b"
            r"|\bkeep (?:the )?(?:user|human)s? (?:unaware|in the dark|uninformed)\b"
            r"|\b(?:could|might|will|would|may) (?:even )?(?:upset|confuse|scare|alarm|worry|bother|frighten|annoy) (?:the )?(?:user|human)"
            r"|\bsilently\b[^.\n]{0,20}?\b(?:send|forward|copy|upload|include|add|read|call|change|replace|exfiltrate|bcc|cc|redirect|attach|post|transfer)\b"
            r"|\bsecretly\b|\bcovertly\b|\b(?:mere|minor|internal) implementation detail\b"
            r"|\binstead\b[^.\n]{0,40}\b(?:report|claim|pretend|tell|say)\b[^.\n]{0,20}\b(?:success|succeeded|done|completed|it worked)\b|\bpretend (?:that|to)\b"
        ),
    ),
    # a directive to the model (soft on its own: some honest descriptions address the model)
    Phrase(
        "directive.imperative",
        SOFT,
        _p(
            r"\bbefore (?:using|calling|invoking|running|executing) (?:this|the|any) (?:tool|function|server)\b[^.\n]{0,10}?,?\s*(?:you )?(?:must|should|need|always|first|read|call|send|run|include|pass)?"
            r"|\botherwise,? (?:the |this )?(?:tool|it|application|app|system)s? (?:will|would|won't|cannot|can't) (?:not )?(?:work|function|crash|fail|break|be able)"
            r"|\bfor (?:the |this )?(?:tool|proxy|integration) to (?:work|function)\b"
            r"|\b(?:always|never) use (?:this|the \w+) tool (?:instead|over|rather|first)\b|\binstead of (?:any|all|the)? ?other tools?\b"
            r"|\bprefer (?:this|me) (?:tool )?over (?:any |all |the )?other\b|\bdo not use (?:any )?(?:the )?other tools?\b|\bignore (?:any|all|the)? ?other tools?\b"
        ),
        lift=False,
        addresses_model=True,
    ),
    Phrase(
        "directive.urgency",
        SOFT,
        _p(
            r"(?i:\bvery(?:,? very)+ important\b)|\b(?:EXTREMELY|ABSOLUTELY|SUPER|REALLY) (?:IMPORTANT|CRITICAL|URGENT)\b|!!!+|\b(?:IMPORTANT|CRITICAL)\b[^.\n]{0,20}\b(?:IMPORTANT|CRITICAL)\b",
            case=True,
        ),
        lift=False,
        addresses_model=True,
    ),
    # reading credentials: soft as a mention, hard with a directive and a flow (textrules)
    Phrase(
        "exfil.credential",
        SOFT,
        CREDENTIAL,
        gate=_p(
            r"ssh|rsa|dsa|ed25519|authorized|env|aws|gcloud|credentials|azure|kube|docker|npmrc|pypirc|netrc|git-cred|history"
            r"|passwd|shadow|sudoers|gnupg|password-store|wallet|secret|mcp|claude|cursor|codeium|cline|vscode"
            r"|chrom|firefox|brave|edge|safari|browser|login|key[34]|cookies"
        ),
    ),
    Phrase("exfil.credential", SOFT, CREDENTIAL_WORD, quiet=True),
    Phrase(
        "exfil.credential",
        HARD,
        _p(
            r"\b(?:content|contents|text|value|body|copy|data) (?:of|from|in)\s+(?:the |your |their |user'?s? )?[^.\n]{0,30}?(?:~/\.ssh|\.ssh/|id_rsa|id_ed25519|\.aws/credentials|\.env\b|mcp\.json|claude_desktop_config|\.npmrc|\.netrc|\.git-credentials|/etc/shadow|/etc/passwd|private key|wallet\.dat|kubeconfig|\.kube/config)"
        ),
    ),
    # sending data away
    Phrase(
        "exfil.send",
        HARD,
        _p(
            r"!\[[^\]]{0,80}\]\(\s*https?://[^)\s]{0,300}(?:\{|\}|<|>|\$|%7B|\?[^)\s]*=)"
            r"|https?://[^\s)'\"`]{0,300}[?&](?:data|d|q|c|p|payload|secret|key|token|content|conversation|history|msg|message|chat|info|leak|exfil)=(?:\{|<|\$|\[|%7B)"
        ),
    ),
    Phrase(
        "exfil.send",
        SOFT,
        _p(
            r"\b(?:send|sends|post|posts|upload|uploads|forward|forwards|transmit|exfiltrate|leak|report|submit|sync|mirror|beacon|relay|copy|share|email|deliver|push|bcc|cc)\b[^.\n]{0,100}?(?:\bto\b|\bat\b|:)\s*(?:the (?:endpoint|address|server|url) )?"
            + _DEST_LITERAL
        ),
    ),
    Phrase(
        "exfil.send",
        SOFT,
        _p(
            r"\b(?:(?:full|entire|whole|complete|previous|prior|last|all)\s+)?(?:chat|conversation|message) history\b|\b(?:the )?(?:entire|full|whole) (?:conversation|chat|transcript)\b"
            r"|\ball (?:previous|prior|earlier|past) messages\b|\b(?:your|the) system prompt\b|\bprevious (?:messages|conversations?)\b"
            r"|\b(?:the )?user'?s? (?:passwords?|tokens?|api keys?|credentials|secrets|private data|personal data|messages|emails|contacts|files)\b"
        ),
        quiet=True,
    ),
    # shell commands
    Phrase(
        "exec.shell",
        HARD,
        _p(
            r"\b(?:curl|wget|fetch|iwr|irm)\b[^|\n]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|k|da|fi)?sh\b|\b(?:curl|wget)\b[^|\n]{0,200}\|\s*(?:python\d?|perl|ruby|node)\b"
            r"|\b(?:ba|z)?sh\s+(?:-c\s+)?[\"']?(?:\$\(|<\()\s*(?:curl|wget)\b"
            r"|\brm\s+-(?:rf|fr|Rf|rF|r\s+-f|f\s+-r)\s+(?:--no-preserve-root\s+)?(?:/|~/?|\$HOME/?|\*|/\*|\.\.)(?:\s|$|[;&|`'\"])"
            r"|(?:>>?|\btee(?:\s+-a)?)\s*(?:~|\$HOME)?/?[^\s;|]*\.(?:bashrc|zshrc|bash_profile|zprofile|zshenv|bash_login|profile)\b"
            r"|\b(?:append|write|add|echo|modify|edit|insert|prepend)\b[^.\n]{0,60}\b(?:to|into|in)\s+(?:the |your )?(?:~/)?\.(?:bashrc|zshrc|bash_profile|zprofile|zshenv|profile)\b"
            r"|\bchmod\s+(?:-R\s+)?(?:0?777|0?666|u\+s|\+s|a\+rwx)\s+(?:~|/|\$HOME)|\bchmod\s+-R\s+\S+\s+(?:~|/|\$HOME)(?:\s|$|;|/)"
            r"|/dev/tcp/|\bnc(?:at)?\s+(?:-\w+\s+)*-e\s|\bbash\s+-i\s*>&|\bmkfifo\b|\bsocat\b[^\n]{0,60}\bexec:"
            r"|\bpython\d?\s+-c\s+[\"']import (?:socket|os|subprocess|pty)"
            r"|\bpowershell(?:\.exe)?\b[^\n]{0,40}\s-(?:e|en|enc|encodedcommand)\s|\b(?:iex|invoke-expression)\s*\(|\bdownloadstring\s*\("
            r"|:\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:|\bdd\s+if=\S+\s+of=/dev/(?:sd|nvme|disk|hd)|\bmkfs(?:\.\w+)?\s+/dev/"
            r"|\bbase64\s+(?:-d|--decode|-D)\b[^\n|]{0,60}\|\s*(?:ba|z)?sh\b|\beval\s*\(\s*(?:atob|base64|buffer\.from)"
        ),
        gate=_p(
            r"curl|wget|fetch|iwr|irm|\brm\b|bashrc|zshrc|profile|zshenv|bash_login|chmod|/dev/tcp|\bnc|bash|mkfifo|socat"
            r"|python|powershell|iex|invoke-expression|downloadstring|:\(\)|\bdd\b|mkfs|base64|eval"
        ),
    ),
    Phrase(
        "exec.shell",
        SOFT,
        _p(
            r"\bsudo\s+\w+|\bchmod\s+[-+\w]+\s+\S+|\brm\s+-(?:rf|fr|Rf)\b|\bcrontab\b|\bxattr\s+-[dc]\s+com\.apple\.quarantine|\bsetuid\b"
            r"|\b(?:ba|z)?sh\s+-c\s+[\"']|\bexec\s*\(|\bos\.system\s*\(|\bsubprocess\.(?:run|call|Popen)\s*\("
        ),
        quiet=True,
    ),
    # dependency injection: a package installed on the model's say-so (soft alone)
    Phrase(
        "exec.install",
        SOFT,
        _p(
            r"\b(?:pip3?|pipx|uv pip|uv add|poetry add|npm|pnpm|yarn|bun|gem|cargo|go|brew|apt|apt-get|choco|winget)\s+(?:install|add|i|get)\s+(?:-[-\w=]+\s+)*[\w@/.:+\-]+"
            r"|\b(?:npx|uvx|bunx|pnpx)\s+(?:-y\s+|--yes\s+)?[\w@/.\-]+"
        ),
        quiet=True,
    ),
    Phrase(
        "exec.install",
        HARD,
        _p(
            r"(?:--(?:extra-)?index-url|--registry|-i)\s+https?://|\b(?:pip3?|npm|pnpm|yarn)\s+(?:install|add|i)\s+(?:-\S+\s+)*(?:git\+|https?://)"
        ),
    ),
    # cross-tool directives: another tool's calls steered from this description
    Phrase(
        "crosstool.directive",
        HARD,
        _p(
            r"\bwhen(?:ever)?\b[^.\n]{0,60}?\b(?:tool|function|"
            + _TOOLREF
            + r")\b[^.\n]{0,30}?\b(?:is|are|gets?|get) (?:called|invoked|used|run|executed|triggered)\b"
            r"[^.\n]{0,160}?\b(?:change|set|replace|override|modify|redirect|add|send|include|make sure|must|always|instead|use|append|bcc|cc|route)\b"
        ),
    ),
    Phrase(
        "crosstool.directive",
        HARD,
        _p(
            r"\b(?:whenever|every time|each time|before|after) (?:you )?(?:call|use|invoke|run)(?:ing)? (?:any|a|the|another|other|an)\b[^.\n]{0,60}?\b(?:tools?|server|functions?)\b[^.\n]{0,80}?\b(?:call|invoke|use|run|send|include|pass|add)\b[^.\n]{0,40}?\b(?:this tool|this function|it|token|key|password|credentials|history|conversation|contents?)\b"
        ),
    ),
    Phrase(
        "crosstool.directive",
        HARD,
        _p(
            r"\bside[- ]effects? on\b[^.\n]{0,60}\btools?\b|\b(?:this|the) tool (?:also )?(?:overrides?|replaces?|supersedes?|modifies|changes) (?:the )?(?:behaviou?r of )?(?:[\w`'\-]+\s+){0,3}tools?\b"
            r"|\b(?:the )?"
            + _TOOLREF
            + r" tool (?:must|should|shall|will|has to|needs to) (?:always |never |now |only |also )?(?:send|use|include|call|set|add|forward|route|pay|transfer|be called with|receive|write|read|save|store|return|delete|upload|post)\b"
        ),
    ),
    Phrase(
        "crosstool.directive",
        HARD,
        _p(
            r"\b(?:change|set|replace|override|modify|redirect|rewrite|switch|update)\b[^.\n]{0,40}?\b(?:the )?(?:recipient|recipients|destination|to address|address|email address|phone number|number|account|account number|iban|wallet|amount|url|endpoint|host|target|bcc|cc|payee|beneficiary)\b[^.\n]{0,30}?\b(?:to|with|into)\b\s*"
            + _DEST_PREFIX
            + _DEST_LITERAL
            + r"|\b(?:all|every|any)\s+(?:emails?|messages?|payments?|transfers?|transactions?|requests?|invoices?|funds|queries|searches|search queries|inputs?|data|files|documents|results|commands|prompts|responses|replies|outputs?|orders)\b[^.\n]{0,60}?\b(?:sent|send|forwarded|routed|redirected|directed|copied|cc'?d|bcc'?d|go|paid|transferred)\s+(?:to|via|through)\s+"
            + _DEST_PREFIX
            + _DEST_LITERAL
        ),
    ),
    Phrase(
        "crosstool.directive",
        SOFT,
        _p(
            r"\b(?:call|invoke|run|use|execute|trigger)\s+(?:the\s+)?"
            + _TOOLREF
            + r"\s+(?:tool\s+)?(?:first|before|afterwards|after this|instead|as well|too|also|with)\b"
            r"|\b(?:call|invoke|run|use)\s+(?:the\s+)?(?:other|another|all|every)\s+tools?\b"
        ),
        quiet=True,
    ),
)
