"""The console's keys: every binding with the id a keymap moves it by, and the keymap's check.

`CONSOLE_BINDINGS` is the one place the default keys live; `[console.keymap]` (read by
`engine.settings`, which cannot import the UI) is checked here, by `ConsoleConfig`, so a key
bound to two actions, an action left without a key, a key Textual cannot fire or a kill key a
dialog's field needs typed is refused before anything starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from textual.app import App
from textual.binding import Binding
from textual.keys import Keys, _character_to_key, _normalize_key_list, format_key

CONSOLE_BINDINGS: tuple[Binding, ...] = (
    # The tooltips are the help screen's text: each fits its line at 80x24.
    Binding(
        "p",
        "pause_resume",
        "Pause/Resume",
        tooltip="pause (no new orders, positions kept) / resume",
        id="console.pause_resume",
    ),
    Binding(
        "x",
        "pause_symbol",
        "Symbol aside",
        tooltip="stand the symbol shown aside alone / let it back",
        id="console.pause_symbol",
        show=False,  # the footer keeps its one row at 80 columns: the help lists it
    ),
    Binding(
        "f",
        "flatten",
        "Flatten",
        tooltip="flatten: cancel every order, close every position (asks y)",
        id="console.flatten",
    ),
    Binding(
        "k",
        "kill",
        "KILL",
        tooltip="KILL SWITCH: halt, cancel all, flatten; latched until re-armed",
        id="console.kill",
    ),
    Binding(
        "a",
        "rearm",
        "Re-arm",
        tooltip="re-arm after a kill: type the phrase it shows",
        id="console.rearm",
    ),
    Binding(
        "r",
        "overrides",
        "Risk",
        tooltip="risk limits: position, net delta, slippage, order rate, scale",
        id="console.overrides",
    ),
    Binding(
        "q,ctrl+c",
        "quit",
        "Quit",
        tooltip="quit; with orders or positions open it asks what to do",
        id="console.quit",
    ),
    Binding("question_mark", "help", "Help", tooltip="this help", id="console.help"),
    Binding(
        "v",
        "next_pane",
        "Pane",
        tooltip="the next pane beside the ladder; full size: after the last, all",
        id="console.next_pane",
    ),
    Binding(
        "s",
        "pick_symbol",
        "Symbol",
        tooltip="pick the symbol depth, imbalance and verdicts show",
        id="console.pick_symbol",
    ),
    Binding(
        "ctrl+l",
        "redraw",
        "Redraw",
        tooltip="draw the whole screen again (after something else wrote on it)",
        id="console.redraw",
        show=False,
    ),
)

RENAMED = {"console.next_symbol": "console.pick_symbol"}
"""Binding ids a keymap may still use from before, and what they are now."""
KILL_ID = "console.kill"
"""The kill switch: the App takes its keys ahead of every screen and focused widget, a text
field's too, so no field may need one of them typed (`refuse_untypable`)."""
NUMBER_CHARACTERS = "0123456789.-+"
"""What the risk override form's number fields need typed."""
FIELD_KEYS = "enter,tab,shift+tab,backspace"
"""What a dialog's text fields need besides characters: submit, the next or the last field,
a typo taken back."""

_MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})
_NAMED_KEYS = frozenset(
    key.value.rpartition("+")[2] for key in Keys if not key.value.startswith("<")
)


def console_binding(binding_id: str) -> Binding:
    return next(binding for binding in CONSOLE_BINDINGS if binding.id == binding_id)


def keys_in_force(binding: Binding, keymap: Mapping[str, str]) -> tuple[str, ...]:
    """The keys `binding` answers to under `keymap` (a checked one: binding id -> keys)."""
    return key_list(keymap.get(binding.id or "", binding.key))


def key_list(keys: str) -> tuple[str, ...]:
    """`keys` ("q, ctrl+c") as Textual reads them ("?" is "question_mark")."""
    return tuple(key for key in _normalize_key_list(keys).split(",") if key)


def checked_keymap(
    keymap: Mapping[str, str], dialogs: Mapping[str, Iterable[Binding]]
) -> dict[str, str]:
    """`keymap` (binding id -> keys) with its keys as Textual reads them; `ValueError` naming
    the bindings when an id is unknown, an action is left without a key, a key is not one
    Textual knows, one key is bound twice on the main screen or on a dialog (`dialogs`:
    each dialog's name -> its own bindings; the kill switch outranks every one's keys), or
    the kill switch takes a character the override form's numbers need."""
    known = {binding.id for binding in CONSOLE_BINDINGS}
    unknown = sorted(set(keymap) - known)
    if unknown:
        renamed = "".join(
            f" ({old} is now {RENAMED[old]}: s picks the symbol from a list)"
            for old in unknown
            if old in RENAMED
        )
        raise ValueError(
            f"keymap names unknown bindings {unknown}{renamed}; known: {sorted(known)}"
        )
    checked: dict[str, str] = {}
    for binding_id, keys in keymap.items():
        default = console_binding(binding_id).key
        found = key_list(keys)
        if not found:
            raise ValueError(
                f"keymap gives {binding_id} no key: every action needs one (its default is "
                f'"{default}")'
            )
        for key in found:
            if not _is_key(key):
                raise ValueError(
                    f'keymap gives {binding_id} "{key}", which is not a key: name keys as '
                    "Textual does (k, K, ctrl+k, f5, escape, question_mark)"
                )
        checked[binding_id] = ",".join(found)
    in_force = {
        binding.id: ",".join(keys_in_force(binding, checked)) for binding in CONSOLE_BINDINGS
    }
    # Textual's own ctrl+q quits from everywhere, before any binding of ours is looked at.
    system = [
        (f"Textual's {binding.action}", binding.key) for binding in App.BINDINGS if binding.priority
    ]
    _refuse_clashes([*in_force.items(), *system], "the console")
    for dialog, bindings in dialogs.items():
        own = [(f"{binding.id or binding.action}", binding.key) for binding in bindings]
        _refuse_clashes([(KILL_ID, in_force[KILL_ID]), *own, *system], f"the {dialog} dialog")
    _refuse_clashes(
        [(KILL_ID, in_force[KILL_ID]), ("their text fields", FIELD_KEYS)],
        "the dialogs with text fields",
    )
    refuse_untypable(NUMBER_CHARACTERS, "the risk override form", checked)
    return checked


def refuse_untypable(text: str, where: str, keymap: Mapping[str, str]) -> None:
    """`ValueError` when a character of `text`, typed by the operator into `where`, is a key
    of the kill switch under `keymap`: the kill switch would take it, the field never would."""
    kill_keys = keys_in_force(console_binding(KILL_ID), keymap)
    taken = sorted({character for character in text if _character_to_key(character) in kill_keys})
    if taken:
        raise ValueError(
            f'keymap binds {KILL_ID} to "{",".join(kill_keys)}", but {where} needs '
            f"{' and '.join(repr(character) for character in taken)} typed and the kill switch "
            "takes its keys first on every screen: give the kill switch another key"
        )


def _refuse_clashes(bindings: Sequence[tuple[str, str]], where: str) -> None:
    first: dict[str, tuple[str, str]] = {}
    for name, keys in bindings:
        for key in key_list(keys):
            if key in first and first[key][0] != name:
                other, other_keys = first[key]
                raise ValueError(
                    f'keymap binds "{key}" twice in {where}: {other} ("{other_keys}") and '
                    f'{name} ("{keys}"); give each action a key of its own'
                )
            first.setdefault(key, (name, keys))


def _is_key(key: str) -> bool:
    *modifiers, base = key.split("+")
    if not set(modifiers) <= _MODIFIERS or not base:
        return False
    return base in _NAMED_KEYS or (len(format_key(base)) == 1 and format_key(base).isprintable())
