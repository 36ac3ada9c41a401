package cli

// E15 is graded by measuring the student's budget tools, not with mutants:
// linking the grader in registers it as E15's checker (check.Register).
import _ "quoteflowlab.dev/lab/grade15"
