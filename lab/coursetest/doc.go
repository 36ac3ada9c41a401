// Package coursetest tests the course's content, not lab's code: every
// lesson has its parts (TestEveryLessonIsComplete), every check still
// applies to the file it edits, every kill-set and wheat record is current
// and reviewed, every stated property has its smallest violation, every page
// and message has its Chinese twin. It has only tests; when one fails, it
// names the lesson and the part.
package coursetest
