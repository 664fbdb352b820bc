"""Reader inputs: ``[CLS] question [SEP] title [SEP] passage-window`` rows, padded into one batch.

This is DPR's reader input (Karpukhin et al. 2020, section 6; the Hugging Face ``DPRReader``
format): no trailing [SEP] and all segment ids 0. Passages longer than the room left after
question and title are cut into overlapping token windows, one row each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from haystack import Document

from dpr_components.readers.spans import windows
from dpr_components.utils.padding import padded_length


@dataclass(frozen=True)
class InputSettings:
    """How questions, titles and passages are fitted into ``max_length`` tokens.

    :param max_length: tokens per row (DPR used 350; 256 is cheaper on a CPU).
    :param stride: passage tokens shared by consecutive windows of a long passage; an answer of
        up to ``stride + 1`` tokens always lies whole in one window.
    :param max_question_tokens: longer questions are cut, so passages always keep room.
    :param max_title_tokens: longer titles are cut.
    """

    max_length: int = 256
    stride: int = 64
    max_question_tokens: int = 64
    max_title_tokens: int = 32

    def __post_init__(self) -> None:
        for name in ("max_length", "max_question_tokens", "max_title_tokens"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        room = self.max_length - self.max_question_tokens - self.max_title_tokens - 3
        if room < 16:
            raise ValueError(
                f"max_length {self.max_length} leaves only {room} passage tokens after a question of "
                f"{self.max_question_tokens} and a title of {self.max_title_tokens} tokens (need 16 or more)"
            )
        if not 0 <= self.stride < room:
            raise ValueError(f"stride must be in [0, {room}) for these lengths, got {self.stride}")


@dataclass(frozen=True)
class TokenizedPassage:
    """A passage's own tokens with character offsets into its text and word numbers."""

    text: str
    ids: list[int]
    offsets: list[tuple[int, int]]
    word_ids: list[int | None]


@dataclass(frozen=True)
class Row:
    """One model input: a window ``[window_start, window_end)`` of passage ``passage_index``."""

    passage_index: int
    window_start: int
    window_end: int
    input_ids: list[int]
    passage_offset: int  # position in ``input_ids`` of the window's first passage token

    @property
    def n_passage_tokens(self) -> int:
        return self.window_end - self.window_start


def tokenize_passage(tokenizer: Any, text: str) -> TokenizedPassage:
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return TokenizedPassage(
        text=text,
        ids=list(encoding["input_ids"]),
        offsets=[tuple(o) for o in encoding["offset_mapping"]],
        word_ids=list(encoding.word_ids()),
    )


def token_ids(tokenizer: Any, text: str, limit: int) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])[:limit]


def prefix_ids(tokenizer: Any, question_ids: list[int], title: str | None, settings: InputSettings) -> list[int]:
    """``[CLS] question [SEP] title [SEP]`` (an empty title leaves ``[SEP] [SEP]``)."""
    title_ids = token_ids(tokenizer, title, settings.max_title_tokens) if title else []
    return [tokenizer.cls_token_id, *question_ids, tokenizer.sep_token_id, *title_ids, tokenizer.sep_token_id]


def passage_rows(
    passage_index: int, prefix: list[int], passage: TokenizedPassage, settings: InputSettings
) -> list[Row]:
    """All window rows of one passage (a passage without tokens gives none)."""
    if not passage.ids:
        return []
    room = settings.max_length - len(prefix)
    return [
        Row(passage_index, start, end, prefix + passage.ids[start:end], len(prefix))
        for start, end in windows(len(passage.ids), room, settings.stride)
    ]


def build_rows(
    tokenizer: Any, question: str, passages: list[tuple[str | None, TokenizedPassage]], settings: InputSettings
) -> list[Row]:
    """Rows for every (title, passage) pair, in passage order."""
    question_ids = token_ids(tokenizer, question, settings.max_question_tokens)
    rows: list[Row] = []
    for index, (title, passage) in enumerate(passages):
        rows.extend(passage_rows(index, prefix_ids(tokenizer, question_ids, title, settings), passage, settings))
    return rows


def collate(rows: list[Row], pad_id: int, max_length: int | None = None) -> dict[str, torch.Tensor]:
    """Right-padded ``input_ids``/``attention_mask`` and a ``passage_mask`` marking passage tokens; with
    ``max_length`` (the rows' limit), padded to the longest row rounded up (:func:`padded_length`)."""
    length = padded_length(max(len(r.input_ids) for r in rows), max_length)
    input_ids = torch.full((len(rows), length), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(rows), length), dtype=torch.long)
    passage_mask = torch.zeros((len(rows), length), dtype=torch.bool)
    for i, row in enumerate(rows):
        input_ids[i, : len(row.input_ids)] = torch.tensor(row.input_ids, dtype=torch.long)
        attention_mask[i, : len(row.input_ids)] = 1
        passage_mask[i, row.passage_offset : len(row.input_ids)] = True
    return {"input_ids": input_ids, "attention_mask": attention_mask, "passage_mask": passage_mask}


def document_title(document: Document, field: str) -> str | None:
    """A document's title from ``meta[field]``, or None when it has no non-blank one."""
    title = document.meta.get(field)
    return title if isinstance(title, str) and title.strip() else None
