"""Record HTTP exchanges with a real gateway once, replay them offline (``cassette.py``)."""
