"""Tests of aigateway._call: the call description, settings, time limits, and the errors made of what arrived."""
