"""The zoo's vocabulary: 128 whitespace-separated word tokens shared by every zoo model.

Layout (ids are stable; tasks and the corpus rely on them):

- 0-3: specials ``<pad> <bos> <eos> <unk>``
- 4-11: structure symbols ``: , | = ? ; > .``
- 12-21: digits ``0``-``9``
- 22-39: letters ``a``-``r`` (RegBench alphabet, variable names)
- 40-127: words ``w0``-``w87``

Text is tokens joined by single spaces; the tokenizer splits on whitespace, so
``"a = 3 , b = a , b ?"`` is 10 tokens. "Ordinary" tokens (never specials) are ids 4-127.
"""

from __future__ import annotations

from pathlib import Path

SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]
SYMBOLS = [":", ",", "|", "=", "?", ";", ">", "."]
DIGITS = [str(d) for d in range(10)]
LETTERS = [chr(ord("a") + i) for i in range(18)]
WORDS = [f"w{i}" for i in range(88)]
TOKENS: list[str] = SPECIALS + SYMBOLS + DIGITS + LETTERS + WORDS
VOCAB: dict[str, int] = {tok: i for i, tok in enumerate(TOKENS)}
VOCAB_SIZE = len(TOKENS)
assert VOCAB_SIZE == 128

PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
FIRST_ORDINARY_ID = len(SPECIALS)
DIGIT_IDS = [VOCAB[d] for d in DIGITS]
LETTER_IDS = [VOCAB[c] for c in LETTERS]
WORD_IDS = [VOCAB[w] for w in WORDS]


def build_tokenizer():
    """A Hugging Face fast tokenizer (word level, whitespace split) over ``TOKENS``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel(VOCAB, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins word tokens with spaces
    # Like Llama tokenizers, prepend BOS when encoding with special tokens.
    core.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", BOS_ID)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        model_max_length=512,
        clean_up_tokenization_spaces=False,
    )


def save_tokenizer(folder: str | Path) -> None:
    build_tokenizer().save_pretrained(str(folder))
