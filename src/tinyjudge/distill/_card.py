"""The model card's text (README.md of a model directory), from its ``tinyjudge.json``."""

from __future__ import annotations

from typing import Any

__all__ = ["model_card"]


def _people_lines(card: dict[str, Any]) -> list[str]:
    """The card's lines on people's labels, when the model learnt from them too."""
    if not card.get("human_source"):
        return []
    how = {
        "weighted": "a person's label where there is one, else the judge's; each person's "
        f"row weighs {card.get('human_weight') or 1:.3g} judge rows",
        "posterior": "a person's label where there is one; elsewhere P(person | judge's "
        "label) from the judge's confusion matrix against people",
        "forward": "forward loss correction by the judge's confusion matrix against people "
        "(EM on soft targets)",
        "dawid-skene": "Dawid-Skene soft targets over the judge and the raters",
        "people": "the head learns from people's labels only, the text features from every item",
    }.get(card.get("human_method", ""), card.get("human_method", "?"))
    return [
        f"- people (label source): `{card['human_source']}`: {card.get('n_human_labels')} "
        f"human and {card.get('n_judge_labels')} judge labels on the training items "
        f"({card.get('n_both')} with both); method `{card.get('human_method')}`: {how}",
    ]


def model_card(meta: dict[str, Any], usage: str) -> str:
    """The README.md of a model directory."""
    rubric = meta["rubric"]
    card = meta.get("card", {})
    lines = [
        f"# {meta['name']}: a tinyjudge reward model ({meta['tier']} tier)",
        "",
        f"- rubric: `{rubric['id']}` v{rubric['version']} (hash `{meta['rubric_hash']}`): "
        f"{rubric['title']}",
        f"- labels: {', '.join(f'`{c}`' for c in meta['classes'])}",
        f"- reads: view `{rubric.get('reward_model', {}).get('view', 'window')}`, combined "
        f"`{rubric.get('reward_model', {}).get('combine', 'last')}` (the rubric's `reward_model`)",
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
    lines += ["", "## Use", "", usage, ""]
    return "\n".join(lines)
