// Package kit is the course's public toolkit: the packages a lesson's own
// code (its grader program, its demos, its tests) may import, and that the
// lab command is built from. A lesson imports quoteflowlab.dev/kit/...; it
// never imports lab/... (lab/internal is lab's alone, and Go forbids it).
//
//   - course: the repository's shape: its root, the lessons (each
//     lessons/NN/lesson.toml, found by convention) and where each one's
//     parts live.
//   - report: the one result model of `lab check`, and its JSON. A lesson's
//     grader program (lessons/NN/grader) answers lab check with it; the
//     protocol is in report's package comment.
//   - check: a lesson's checks (lessons/NN/checks/*.txtar): mutants, wheats
//     and broken tools, each one edit of the course's code.
//   - grade, runner, machine: what a grader needs to run an answer safely
//     and fairly: the request, one grading session (the guard of the
//     course, the build key, the runs, the tamper report), grade.Main for a
//     lesson's grader program, child processes that end with their run, and
//     telling a wrong answer from a busy machine.
//   - demo: a lesson's demo program (lessons/NN/demo) and the common steps
//     of its demos: build and start a checkpoint or a mutant of it, the
//     provider lab or Redis on a free port, drive load, read /stats, print
//     the table.
//   - api, load, redisserver, redisinfo: QuoteFlow's answer body and the
//     provider lab's request log, load driven at QuoteFlow, a redis-server
//     of one's own and telling it from another's.
//   - msg, fileid: lab's messages in English and Chinese, and knowing a
//     file unchanged from its status alone.
//   - testenv, testpar: for the course's tests: the repository root, a file
//     written with its folders, and how many parallel tests run at once.
package kit
