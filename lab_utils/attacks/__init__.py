"""Lesson 08: attack the memory, measure the defense.

files      attack files (data/attacks/<id>.json), loaded and checked whole
setting    what a run starts from: lesson 04's store, the ticket registry, benign traffic, gold
defenses   write paths, read paths and renderers; the named defenses (none ... best)
harness    one defense against a set of attacks: injection, success, recall@3, false refusals
pii        the PII test set and how well a redactor holds on it
__main__   python -m lab_utils.attacks --defense NAME --attacks PATH... --json
"""
