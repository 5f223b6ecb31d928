"""Composing configs with Hydra's compose API, and turning Hydra's errors into one clear line.

The app is a thin layer over this: tests, the planner and the CLI all compose the same way, so a trial
composed inside a sweep equals the same trial composed standalone.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ablate.config import ConfigError, register_schemas


def conf_dir() -> Path:
    """conf/ at the repository root (editable install), or $ABLATE_CONF."""
    env = os.environ.get("ABLATE_CONF")
    path = Path(env) if env else Path(__file__).resolve().parent.parent / "conf"
    if not (path / "config.yaml").exists():
        raise ConfigError(
            f"ABLATE_CONF={str(path)!r}: no config.yaml there (set ABLATE_CONF to ablate's conf/ folder)"
        )
    return path


def group_names() -> list[str]:
    """The config groups: the folders of conf/."""
    return sorted(p.name for p in conf_dir().iterdir() if p.is_dir())


def group_options(group: str) -> list[str]:
    """The group's options, in numeric order when they are numbers (k: 2, 4, 8, 16, 32)."""
    d = conf_dir() / group
    names = [p.stem for p in d.glob("*.yaml")] if d.is_dir() else []
    return sorted(names, key=lambda n: (0, int(n), "") if n.isdigit() else (1, 0, n))


def override_key(override: str) -> str:
    """'+a.b=1' -> 'a.b'; 'k=16' -> 'k'."""
    return override.split("=", 1)[0].lstrip("+~")


def merge_overrides(*lists: list[str]) -> list[str]:
    """Later lists win, key by key, keeping first-seen order: baseline, then CLI, then the variant."""
    merged: dict[str, str] = {}
    for lst in lists:
        for ov in lst:
            merged.pop(override_key(ov), None)
            merged[override_key(ov)] = ov
    return list(merged.values())


def _one_line(exc: Exception, overrides: list[str]) -> str:
    """Hydra/OmegaConf messages are multi-line; reduce to 'key=value: what is allowed'."""
    msg = str(exc) + "\n" + str(exc.__cause__ or "")
    for pattern, say in _MESSAGES:
        m = re.search(pattern, msg)
        line = say(m, msg, overrides) if m else None
        if line is not None:
            return line
    first = msg.strip().splitlines()[0] if msg.strip() else type(exc).__name__
    return f"{first} (overrides: {' '.join(overrides)})"


def _full_key(msg: str, default: str = "?") -> str:
    full = re.search(r"full_key: (\S+)", msg)
    return full.group(1) if full else default


def _unknown_option(m, msg, overrides) -> str:
    from ablate.aliases import PLAIN_KEYS

    group, value = m.group(1), m.group(2)
    plain = f"; any other value: {PLAIN_KEYS[group]}={value}" if group in PLAIN_KEYS else ""
    return f"{group}={value!r}: unknown option; allowed: {', '.join(group_options(group)) or '(none)'}{plain}"


def _numeric_option(m, msg, overrides) -> str | None:
    """k=3.5: Hydra names neither the group nor the value."""
    from ablate.aliases import PLAIN_KEYS

    groups = set(group_names())
    for ov in overrides:
        key, _, value = ov.partition("=")
        if key in groups:
            try:
                float(value)
            except ValueError:
                continue
            plain = f"; any other value: {PLAIN_KEYS[key]}={value}" if key in PLAIN_KEYS else ""
            return f"{key}={value}: unknown option; allowed: {', '.join(group_options(key))}{plain}"
    return None


def _no_such_group(m, msg, overrides) -> str | None:
    if "No match in the defaults list" not in msg:
        return None
    return f"{m.group(1)}: no such config group; groups: {', '.join(group_names())}"


def _no_such_key(m, msg, overrides) -> str:
    from ablate.config.keys import did_you_mean

    key = _full_key(msg, default=m.group(1))
    typed = [o.split("=", 1)[0].lstrip("+~") for o in overrides]  # the whole path, not its first bad part
    key = next((t for t in typed if t.startswith(key + ".")), key)
    return f"{key}: no such key in {m.group(2)}{did_you_mean(key, tuple(group_names()))}"


def _wrong_type(m, msg, overrides) -> str:
    kind = {"bool": "bool (true or false)"}.get(m.group(2), m.group(2))
    return f"{_full_key(msg)}={m.group(1)!r}: must be of type {kind}"


def _wrong_shape(m, msg, overrides) -> str:
    """A sweep file's value of the wrong shape (variants: {a: k=4} instead of {a: [k=4]})."""
    key = _full_key(msg)
    what = f"{key}={m.group(1)}: a {m.group(2)}" if m.group(1) else f"{key}: a mapping ({m.group(3)})"
    want = "a list of overrides, e.g. [k=4]" if "List" in m.group(4) else m.group(4).replace("typing.", "")
    return f"{what}, must be {want}"


def _comma_list(m, msg, overrides) -> str:
    return (
        f"{m.group(1)}: a comma list is a sweep over those values: add -m (python -m ablate -m "
        f"{m.group(1)} ...), or write a list as key=[a,b]"
    )


def _not_converted(m, msg, overrides) -> str:
    return f"{_full_key(msg)}={m.group(1)!r}: must be of type {m.group(2)}"


def _malformed_yaml(m, msg, overrides) -> str:
    """A YAML syntax error in a config or sweep file."""
    lines = [ln.strip() for ln in msg.splitlines() if ln.strip() and not ln.strip().startswith("in ")]
    return f"{m.group(1)}: malformed YAML at line {m.group(2)}: {'; '.join(lines[:2])}"


def _unparsable(m, msg, overrides) -> str:
    bad = next((o for o in overrides if m.group(1).rstrip("=") in o), m.group(1))
    return f"{bad}: cannot parse this override; quote list items that contain '=' (e.g. key=['a=b'])"


# Hydra's and OmegaConf's messages, in the order they are tried, each with its one line
_MESSAGES = [
    (r"Could not find '([^']+)/([^']+)'", _unknown_option),
    (r"Config group override must be a string or a list\. Got (\w+)", _numeric_option),
    (r"Could not override '([^']+)'", _no_such_group),
    (r"Key '([^']+)' not in '([^']+)'", _no_such_key),
    (r"Value '([^']*)' is not a valid (\w+)", _wrong_type),
    (r"(?:Value (\S+) \((\w+)\)|'(\w+)') is incompatible with type hint '([^']+)'", _wrong_shape),
    (r"Ambiguous value for argument '([^']+)'", _comma_list),
    (r"Value '([^']*)' (?:of type '[^']*' )?could not be converted to (\w+)", _not_converted),
    (r'in "([^"]+\.yaml)", line (\d+)', _malformed_yaml),
    (r"no viable alternative at input '([^']*)'", _unparsable),
]


def _quote_numeric_groups(overrides: list[str]) -> list[str]:
    """Hydra reads `k=16` as an int, but group options are names: quote numeric options (`k='16'`)."""
    groups = set(group_names())
    out = []
    for ov in overrides:
        key, sep, value = ov.partition("=")
        if sep and key.lstrip("+~") in groups and re.fullmatch(r"\d+", value):
            ov = f"{key}='{value}'"
        out.append(ov)
    return out


def _hydra_compose(overrides: list[str]) -> DictConfig:
    """Hydra's compose of conf/config.yaml, unresolved; raises ConfigError with one line."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    register_schemas()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            return hydra_compose(config_name="config", overrides=overrides)
    except ConfigError:
        raise
    except Exception as exc:  # Hydra raises several exception types; all mean "bad input"
        raise ConfigError(_one_line(exc, overrides)) from None
    finally:
        GlobalHydra.instance().clear()


def _resolved(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    try:
        OmegaConf.resolve(cfg)
    except Exception as exc:
        raise ConfigError(_one_line(exc, overrides)) from None
    return cfg


def _refuse_foreign_names(overrides: list[str]) -> None:
    """TRL/verl names (num_generations, beta, loss_type, ...): one line naming ablate's key instead."""
    from ablate.aliases import hint

    for ov in overrides:
        h = hint(override_key(ov))
        if h:
            raise ConfigError(f"{ov}: not an ablate key; {h}")


def _refuse_unknown_appends(overrides: list[str]) -> None:
    """Hydra's ``+key=value`` appends a key the schema may not have: one that no trial reads would still change
    the trial's hash. Only a group, or a path the schema has or leaves free-form, may be appended."""
    from ablate.config.keys import did_you_mean, is_known_path

    groups = None
    for ov in overrides:
        if not ov.startswith("+"):
            continue
        key = override_key(ov)
        groups = groups or set(group_names())
        if key.split("@")[0] not in groups and not is_known_path(key):
            raise ConfigError(
                f"{ov}: no such key ('+' adds a key that no trial would read){did_you_mean(key, tuple(groups))}"
            )


def compose(overrides: list[str] | None = None) -> DictConfig:
    """Compose conf/config.yaml with ``overrides``; raises ConfigError with one line on any composition error."""
    _refuse_foreign_names(list(overrides or []))
    _refuse_unknown_appends(list(overrides or []))
    overrides = _quote_numeric_groups(list(overrides or []))
    return _resolved(_hydra_compose(overrides), overrides)


class Composer:
    """compose() for many override lists that share their group choices, as a sweep's variants do.

    Hydra composes in two phases: the defaults list (group choices such as ``k=16``) builds the config,
    then every ``key=value`` override is applied to it. A full compose costs ~0.1 s, mostly the first
    phase, so this runs that phase once per distinct set of group choices and replays only the second phase,
    with Hydra's own function for it. Results equal compose() (checked over every shipped sweep in tests).
    """

    def __init__(self) -> None:
        self._groups = set(group_names())
        self._bases: dict[tuple[str, ...], DictConfig] = {}
        try:
            from hydra._internal.config_loader_impl import ConfigLoaderImpl
            from hydra.core.override_parser.overrides_parser import OverridesParser

            self._apply = ConfigLoaderImpl._apply_overrides_to_config
            self._parser = OverridesParser.create()
        except (ImportError, AttributeError):  # another Hydra: the plain path is always right
            self._apply = None

    def compose(self, overrides: list[str]) -> DictConfig:
        if self._apply is None:
            return compose(overrides)
        _refuse_unknown_appends(overrides)
        overrides = _quote_numeric_groups(list(overrides))
        groups = tuple(ov for ov in overrides if override_key(ov).split("@")[0] in self._groups)
        values = [ov for ov in overrides if ov not in groups]
        if groups not in self._bases:
            self._bases[groups] = _hydra_compose(list(groups))
        cfg = self._bases[groups].copy()
        try:
            self._apply(self._parser.parse_overrides(values), cfg)
        except Exception as exc:
            raise ConfigError(_one_line(exc, overrides)) from None
        return _resolved(cfg, overrides)
