"""The firmware's programs (table1, table2, user, micro, kernel), one module each behind one interface
(:class:`pintime.programs.base.Program`), found by the RUN frame's program id
(:func:`pintime.programs.registry.program_of`)."""
