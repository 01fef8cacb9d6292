"""The reference pages' path for `ResumedTurn`; the HTTP server is `symfonic.server`."""
