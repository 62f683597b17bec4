"""Moved: an application in process is conformance/targets/inprocess.py, and fuzz_application is
conformance/fuzz/'s. This name only says so, to those who still import it."""

raise ImportError("conformance.inprocess is gone: from conformance.fuzz import fuzz_application "
                  "(the Application it calls is conformance.targets.inprocess.Application)")
