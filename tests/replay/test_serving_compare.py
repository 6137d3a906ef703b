"""ReplayModel compares each request's conversation from where the last comparison left
off (a re-run of a long session was quadratic): it must find what a full comparison finds,
also when an earlier message changed (pruned, compacted, cleared) or the lists shrank."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from clawlog.actors.replay.serving import ReplayModel, _first_difference
from clawlog.events.domain.session import ChatMessage

#: A few messages, reused by identity (as a conversation's requests share them) and as
#: equal copies (as the recording's own objects are).
_POOL = [ChatMessage(role="user", content=text) for text in ("a", "b", "c", "d")]


def _message(index: int, copy: bool) -> ChatMessage:
    message = _POOL[index]
    return ChatMessage(role=message.role, content=message.content) if copy else message


_CONVERSATION = st.lists(st.tuples(st.integers(0, 3), st.booleans()), max_size=12).map(
    lambda picks: [_message(i, copy) for i, copy in picks]
)


@given(st.lists(st.tuples(_CONVERSATION, _CONVERSATION), min_size=1, max_size=8))
def test_every_request_gets_the_full_comparisons_answer(
    requests: list[tuple[list[ChatMessage], list[ChatMessage]]],
) -> None:
    model = ReplayModel([], name="replay", provider="replay")
    for recorded, now in requests:
        assert model._messages_difference(recorded, now) == _first_difference(recorded, now)[0]


def test_a_growing_conversation_whose_first_message_changes_is_caught() -> None:
    model = ReplayModel([], name="replay", provider="replay")
    recorded = [_POOL[0], _POOL[1]]
    now = [_POOL[0], _POOL[1]]
    assert model._messages_difference(recorded, now) is None
    pruned = [ChatMessage(role="user", content="a (pruned)"), _POOL[1], _POOL[2]]
    found = model._messages_difference([*recorded, _POOL[2]], pruned)
    assert found == ("#1 user: a", "#1 user: a (pruned)")
