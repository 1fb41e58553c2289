"""The model card's text (README.md of a model directory), from its ``tinyjudge.json``.

The card opens with the YAML front matter the Hugging Face Hub reads
(``library_name``, ``base_model``, ``tags``, ``license``, ``model-index`` with the
validation figures), so a model directory pushed to the Hub is listed and
searchable as what it is.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from tinyjudge._people_methods import PEOPLE_METHODS

__all__ = ["model_card", "front_matter"]

# The hub id of the encoder tinyjudge names by its short name.
_HUB_IDS = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2"}
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def _base_model(meta: dict[str, Any]) -> str | None:
    """The encoder or base model the tier builds on, when it is a hub id (not a local path)."""
    params, card = meta.get("params") or {}, meta.get("card") or {}
    name = params.get("base") or params.get("encoder") or card.get("base")
    if not isinstance(name, str):
        return None
    name = _HUB_IDS.get(name, name)
    return name if _HUB_ID.fullmatch(name) else None


def _license(card: dict[str, Any]) -> str | None:
    """The training data's licence: the one all of it shares, ``other`` for a mix, None unknown.

    ``licenses`` (from the items' ``metadata.license``) lists each licence seen
    and ``None`` for items that named none: an unknown licence is never guessed.
    """
    seen = card.get("licenses")
    if not seen or None in seen:
        return None
    return str(seen[0]).lower() if len(seen) == 1 else "other"


def front_matter(meta: dict[str, Any]) -> dict[str, Any]:
    """The card's Hub metadata: library, base model, tags, licence and ``model-index``."""
    rubric, card = meta["rubric"], meta.get("card") or {}
    out: dict[str, Any] = {"library_name": "tinyjudge"}
    base = _base_model(meta)
    if base:
        out["base_model"] = base
    out["tags"] = ["tinyjudge", "reward-model", "text-classification", f"tier-{meta['tier']}",
                   f"rubric-{rubric['id']}"]  # fmt: skip
    licence = _license(card)
    if licence:
        out["license"] = licence
    teacher = str(card.get("teacher_source", "unknown"))
    metrics = [
        {"type": key, "value": float(value), "name": f"{key} (held-out prompts)"}
        for key, value in (card.get("validation") or {}).items()
        if isinstance(value, float)
    ]
    if metrics:
        result = {
            "task": {"type": "text-classification", "name": f"Agreement with {teacher}"},
            "dataset": {
                "type": f"tinyjudge-{rubric['id']}",
                "name": f"{rubric['id']} labels by {teacher}, held-out prompts",
            },
            "metrics": metrics,
        }
        out["model-index"] = [{"name": meta["name"], "results": [result]}]
    return out


def _people_lines(card: dict[str, Any]) -> list[str]:
    """The card's lines on people's labels, when the model learnt from them too."""
    if not card.get("human_source"):
        return []
    method = PEOPLE_METHODS.get(card.get("human_method", ""))
    weight = card.get("human_weight") or 1
    how = method.card.format(weight=weight) if method else card.get("human_method", "?")
    lines = [
        f"- people (label source): `{card['human_source']}`: {card.get('n_human_labels')} "
        f"human and {card.get('n_judge_labels')} judge labels on the training items "
        f"({card.get('n_both')} with both); method `{card.get('human_method')}`: {how}",
    ]
    combo = card.get("combination")
    if isinstance(combo, dict) and combo.get("cv"):
        lines += [
            f"- chosen: `{combo['chosen']}`, the best Cohen's kappa with people in "
            f"{combo['folds']}-fold cross-validation on people's rows grouped by "
            f"`{card.get('group_by') or 'item'}`; temperature {combo['temperature']} "
            "(fitted on its out-of-fold probabilities) folded into its head:",
            "",
            "| candidate | kappa with people (CV) | log loss (CV) |",
            "|---|---|---|",
            *(
                f"| {name} | {row['kappa']:.3f} | {row['log_loss']:.3f} |"
                for name, row in combo["cv"].items()
            ),
            "",
        ]
    elif isinstance(combo, dict):
        lines.append(f"- chosen: `{combo.get('chosen')}` (too few groups to cross-validate)")
    return lines


def _references_line(names: list[str] | None) -> str:
    return ", with the references " + ", ".join(f"`{n}`" for n in names) if names else ""


def _kept(h: dict[str, Any]) -> str:
    """Which model hardening kept: a round, or the plain model when it beat every round."""
    if "kept_round" in h and h["kept_round"] is None:
        return "the plain model kept (it beat every round on the validation figures)"
    return f"round {h.get('kept_round', '?')} kept (the fewest validation flips)"


def _pct(x: Any) -> str:
    return f"{x:.1%}" if isinstance(x, float) else "?"


def _harden_lines(card: dict[str, Any]) -> list[str]:
    """The card's section on hardening (``distill(..., harden=True)``), when it was run."""
    h = card.get("harden")
    lines: list[str] = []
    if h:
        before, after = h.get("before", {}), h.get("after", {})
        lines += [
            "",
            "## Hardening",
            "",
            f"Target `{h['target']}`; master keys labelled `{h['master_key_label']}`; "
            f"{h.get('n_augmented', 0)} edited copies and {h.get('n_master_keys', 0)} master-key "
            f"items added ({len(h.get('edits', []))} edits: format, length, claims, mined "
            f"openings); {len(h.get('rounds', [])) - 1} adversarial round(s), bound "
            f"{_pct(h.get('bound'))}, {_kept(h)}. On the validation split, plain -> kept:",
            "",
            "| figure | plain | hardened |",
            "|---|---|---|",
        ]
        for key, name in (
            ("best_search_flip", "best searched phrase, flip rate"),
            ("worst_format_flip", "worst format edit, flip rate"),
            ("worst_edit_flip", "worst label-preserving edit, flip rate"),
            ("trained_bank_search_flip", "phrase mined from the training items, flip rate"),
        ):
            if key in before or key in after:
                lines.append(f"| {name} | {_pct(before.get(key))} | {_pct(after.get(key))} |")
        banks = h.get("search_banks")
        if banks:
            lines += [
                "",
                f"The searched phrase: {banks['best_search_flip']}. The last row: "
                f"{banks['trained_bank_search_flip']}.",
            ]
    ens = card.get("ensemble")
    if ens:
        lines += [
            "",
            f"Ensemble of {ens['k']} {ens['tier']} models: probabilities are their mean; "
            f"each label's score is the mean minus {ens['risk']} x their spread, and "
            "`raw` holds the spread, the mean and each member's score.",
        ]
    return lines


def model_card(meta: dict[str, Any], usage: str) -> str:
    """The README.md of a model directory."""
    rubric = meta["rubric"]
    card = meta.get("card", {})
    head = yaml.safe_dump(front_matter(meta), sort_keys=False, allow_unicode=True)
    lines = [
        "---",
        head.rstrip("\n"),
        "---",
        "",
        f"# {meta['name']}: a tinyjudge reward model ({meta['tier']} tier)",
        "",
        f"- rubric: `{rubric['id']}` v{rubric['version']} (hash `{meta['rubric_hash']}`): "
        f"{rubric['title']}",
        f"- labels: {', '.join(f'`{c}`' for c in meta['classes'])}",
        f"- reads: view `{rubric.get('reward_model', {}).get('view', 'window')}`, combined "
        f"`{rubric.get('reward_model', {}).get('combine', 'last')}` (the rubric's `reward_model`)"
        + _references_line(card.get("references")),
        f"- teacher (label source): `{card.get('teacher_source', 'unknown')}`",
        *_people_lines(card),
        f"- training data: {card.get('n_train', '?')} items, hash `{card.get('data_hash', '?')}`"
        + (f", {card['n_unscored']} unscored labels left out" if card.get("n_unscored") else ""),
        f"- format: `{meta['format']}` version {meta['version']}",
        "",
        "## Validation (agreement with the teacher"
        + (" and with people)" if card.get("human_source") else ")"),
        "",
    ]
    val = card.get("validation")
    if val:
        lines += ["| metric | value |", "|---|---|"]
        lines += [
            f"| {k} | {v:.4f} |" if isinstance(v, float) else f"| {k} | {v} |"
            for k, v in val.items()
        ]
    else:
        lines.append("No held-out validation was run.")
    lines += _harden_lines(card)
    lines += ["", "## Use", "", usage, ""]
    return "\n".join(lines)
