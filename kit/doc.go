// Package kit is the course's public toolkit: the packages a lesson's own
// code (its grader program, its demos, its tests) may import, and that the
// lab command is built from. A lesson imports quoteflowlab.dev/kit/...; it
// never imports lab/... (lab/internal is lab's alone, and Go forbids it).
//
//   - course: the repository's shape: its root, the lessons (each
//     lessons/NN/lesson.toml, found by convention) and where each one's
//     parts live.
//   - report: the one result model of `lab check`, and its JSON. A lesson's
//     grader program reports through it; lab renders that report like any
//     other.
//   - check: a lesson's checks (lessons/NN/checks/*.txtar): mutants, wheats
//     and broken tools, each one edit of the course's code.
//   - grade, runner, machine: what a grader needs to run an answer safely
//     and fairly: the request, the guard of the course, child processes
//     that end with their run, and telling a wrong answer from a busy
//     machine.
//   - load, redisinfo, msg, fileid: driving load at QuoteFlow, telling one's
//     own redis-server from another's, lab's messages in English and
//     Chinese, and knowing a file unchanged from its status alone.
//   - demo (coming): the common steps of a lesson's demos (start a
//     checkpoint or a mutant of it, the provider lab or Redis on a free
//     port, drive load, read /stats, print the table).
package kit
