"""Judge calibration: golden labels a person gives blind, and the judge measured against them."""
