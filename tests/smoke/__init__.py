"""The smoke suite: aigateway as users install it, through its public API only.

CI (``.ci/install_lanes.py``) copies this folder out of the checkout and runs it with pytest
in fresh virtual environments: the wheel without extras, with each extra alone, and at the
lowest versions ``pyproject.toml`` allows. It needs nothing beyond aigateway and pytest: the
gateway is a stand-in made of the standard library (``_gateway.py``). The development suite
runs it too.
"""
