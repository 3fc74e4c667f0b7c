"""Shared by the Kimi K3 families' "every shipped kernel is a default launch" tests."""


def record_launch_choices(monkeypatch, mod, name="select_launch", many=False):
    """The launches ``mod``'s wrapper selects through ``mod.<name>`` (each call's result, or
    with ``many`` each call's list of them), collected in the returned list; the launches
    themselves do nothing (``mod.L.launch`` is a no-op)."""
    picked = []
    select = getattr(mod, name)

    def record(*args, **kwargs):
        chosen = select(*args, **kwargs)
        if many:
            picked.extend(chosen)
        else:
            picked.append(chosen)
        return chosen

    monkeypatch.setattr(mod, name, record)
    monkeypatch.setattr(mod.L, "launch", lambda *args, **kwargs: None)
    return picked
