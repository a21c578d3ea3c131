"""What the mock gateway answers: its routes, each a handler given a `RequestContext`.

``chat.py``: ``/v1/chat/completions`` and ``/v1/models``; ``run.py``: ``/v1/run``,
``/v1/image/generate`` and ``/v1/files/{id}`` (the built-in service categories), whose
planners are in ``planners.py`` and the files they make in ``media.py``; ``discovery.py``: the
public documents at the site root; ``admin.py``: the admin API under ``/_mock/``.
"""
