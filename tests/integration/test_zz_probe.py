import pytest

from tests.support import mailgen


@pytest.mark.parametrize("kind", ["cyrus", "cyrus_altns"])
def test_probe(kind: str, request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue(kind)
    odd = []
    for n in range(40):
        user = server.new_user("probe")
        for short in ("Archive", "Projects", "Older"):
            server.seed(user, server.mailbox_name(short), [mailgen.plain_message("x", "y")])
        with server.connect(user) as c:
            for flags, _, name in c.list_folders():
                specials = [
                    f
                    for f in flags
                    if f.lower() in (b"\\trash", b"\\junk", b"\\sent", b"\\drafts", b"\\archive")
                ]
                if specials and not any(s in name for s in ("Trash", "Junk", "Sent", "Drafts")):
                    odd.append((n, name, flags))
    assert odd == []
