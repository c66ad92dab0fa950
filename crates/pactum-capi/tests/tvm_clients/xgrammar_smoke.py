"""xgrammar 0.2.8 programs (grammar-constrained decoding: its C++ core runs through
libtvm_ffi.so), run on whichever libtvm_ffi.so the installed tvm_ffi package loads.

Run by scripts/xgrammar_client.sh (scripts/both_libraries.sh) on the official library and on
pactum's. Prints one line per program (OK or FAIL with the error) and a count; exits 1 when
any program fails, 2 when the library mapped is not the one in PACTUM_EXPECT_LIB.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_harness import finish, program, require_expected_library  # noqa: E402


@program("import xgrammar")
def import_xgrammar():
    import xgrammar  # noqa: F401


require_expected_library()

import torch  # noqa: E402
import xgrammar as xgr  # noqa: E402

# A small raw vocabulary (no tokenizer download): token 0 ends the sequence.
VOCAB = ["<eos>", "{", "}", '"', "name", "age", ":", " ", ",", "1", "2", "x", "[", "]",
         '"name"', '"age"']
EOS = 0
info = xgr.TokenizerInfo(VOCAB, vocab_type=xgr.VocabType.RAW, stop_token_ids=[EOS])
compiler = xgr.GrammarCompiler(info, max_threads=1)


def tokenize(text):
    """Greedy longest-match tokenization over VOCAB."""
    ids, at = [], 0
    while at < len(text):
        token = max(
            (t for t in range(1, len(VOCAB)) if text.startswith(VOCAB[t], at)),
            key=lambda t: len(VOCAB[t]),
        )
        ids.append(token)
        at += len(VOCAB[token])
    return ids


def allowed_tokens(matcher):
    """The tokens the matcher's next-token bitmask leaves at logit 0 (the rest get -inf)."""
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    logits = torch.zeros(1, info.vocab_size)
    xgr.apply_token_bitmask_inplace(logits, bitmask)
    return [VOCAB[t] for t in range(info.vocab_size) if logits[0, t] == 0]


@program("a JSON schema compiled, the matcher's bitmask and accept_token over a token sequence")
def json_schema():
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
        "additionalProperties": False,
    }
    compiled = compiler.compile_json_schema(
        json.dumps(schema), any_whitespace=False, separators=(",", ":")
    )
    matcher = xgr.GrammarMatcher(compiled)
    assert allowed_tokens(matcher) == ["{"], allowed_tokens(matcher)
    for position, token in enumerate(tokenize('{"name":"x","age":12}')):
        assert VOCAB[token] in allowed_tokens(matcher), (position, VOCAB[token])
        assert matcher.accept_token(token), (position, VOCAB[token])
    assert not matcher.is_terminated()
    assert matcher.accept_token(EOS) and matcher.is_terminated()
    matcher.reset()
    assert not matcher.accept_token(VOCAB.index("x")), "a value must start with {"


@program("an EBNF grammar compiled and matched; its normalized text")
def ebnf():
    grammar = 'root ::= "[" item ("," item)* "]"\nitem ::= "1" | "2"'
    compiled = compiler.compile_grammar(grammar)
    matcher = xgr.GrammarMatcher(compiled)
    assert all(matcher.accept_token(VOCAB.index(c)) for c in "[1,2]")
    assert matcher.accept_token(EOS) and matcher.is_terminated()
    matcher = xgr.GrammarMatcher(compiled)
    assert matcher.accept_token(VOCAB.index("[")) and not matcher.accept_token(VOCAB.index("x"))
    text = str(xgr.Grammar.from_ebnf(grammar))
    assert text.splitlines() == [
        'root ::= (("[" item root_1 "]"))',
        'item ::= (("1") | ("2"))',
        'root_1 ::= ("" | ("," item root_1))',
    ], text


finish()
