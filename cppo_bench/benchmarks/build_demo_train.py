"""Build cppo_bench/benchmarks/demo_train_problems.jsonl: the shipped `demo_train` set.

Original easy stdin problems written for this project (disjoint from `demo`), then the
call-based ones of build_demo_train_call.py. Each entry is
(id, title, task sentence, input format, output format, reference, test inputs); expected
outputs are produced by running the reference, so they cannot disagree with it.
Run: python -m cppo_bench.benchmarks.build_demo_train
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cppo_bench.benchmarks.build_demo_train_call import CALL, call_record, demo_record

OUT = Path(__file__).resolve().parent / "demo_train_problems.jsonl"

P = [
    (
        "double-it",
        "Double It",
        "Given an integer n, print 2 * n.",
        "One integer n (-10^9 <= n <= 10^9).",
        "One integer.",
        "n = int(input())\nprint(2 * n)\n",
        ["3", "0", "-7", "1000000000", "12", "-1"],
    ),
    (
        "square-it",
        "Square It",
        "Given an integer n, print n squared.",
        "One integer n (-10^4 <= n <= 10^4).",
        "One integer.",
        "n = int(input())\nprint(n * n)\n",
        ["4", "0", "-3", "10000", "7", "1"],
    ),
    (
        "difference",
        "Difference",
        "Given two integers a and b, print a - b.",
        "One line with a and b.",
        "One integer.",
        "a, b = map(int, input().split())\nprint(a - b)\n",
        ["5 3", "3 5", "0 0", "-2 -9", "100 1", "7 7"],
    ),
    (
        "product-two",
        "Product of Two",
        "Given two integers a and b, print their product.",
        "One line with a and b.",
        "One integer.",
        "a, b = map(int, input().split())\nprint(a * b)\n",
        ["2 3", "0 5", "-4 6", "-3 -3", "1000 1000", "1 1"],
    ),
    (
        "max-of-three",
        "Max of Three",
        "Print the largest of three integers.",
        "One line with three integers.",
        "One integer.",
        "print(max(map(int, input().split())))\n",
        ["1 2 3", "3 2 1", "-1 -2 -3", "5 5 5", "0 -1 10", "7 9 8"],
    ),
    (
        "min-of-three",
        "Min of Three",
        "Print the smallest of three integers.",
        "One line with three integers.",
        "One integer.",
        "print(min(map(int, input().split())))\n",
        ["1 2 3", "3 2 1", "-1 -2 -3", "5 5 5", "0 -1 10", "7 9 8"],
    ),
    (
        "parity-word",
        "Parity Word",
        "Print EVEN if n is even and ODD otherwise.",
        "One integer n.",
        "EVEN or ODD.",
        "n = int(input())\nprint('EVEN' if n % 2 == 0 else 'ODD')\n",
        ["2", "7", "0", "-3", "100", "99"],
    ),
    (
        "sign-word",
        "Sign Word",
        "Print POSITIVE, NEGATIVE or ZERO depending on the sign of n.",
        "One integer n.",
        "One word.",
        "n = int(input())\nprint('POSITIVE' if n > 0 else 'NEGATIVE' if n < 0 else 'ZERO')\n",
        ["5", "-5", "0", "1", "-1000", "42"],
    ),
    (
        "absolute",
        "Absolute Value",
        "Print the absolute value of n.",
        "One integer n.",
        "One integer.",
        "print(abs(int(input())))\n",
        ["5", "-5", "0", "-123456", "9", "-1"],
    ),
    (
        "upper-case",
        "Shout",
        "Print the given word in upper case.",
        "One word of lowercase letters.",
        "The word in upper case.",
        "print(input().strip().upper())\n",
        ["hello", "a", "python", "code", "xyz", "bench"],
    ),
    (
        "string-length",
        "String Length",
        "Print the number of characters in the given word.",
        "One word.",
        "One integer.",
        "print(len(input().strip()))\n",
        ["hello", "a", "python", "abcdefghij", "xy", "planner"],
    ),
    (
        "first-char",
        "First Letter",
        "Print the first character of the given word.",
        "One non-empty word.",
        "One character.",
        "print(input().strip()[0])\n",
        ["hello", "a", "python", "zebra", "xy", "queue"],
    ),
    (
        "last-char",
        "Last Letter",
        "Print the last character of the given word.",
        "One non-empty word.",
        "One character.",
        "print(input().strip()[-1])\n",
        ["hello", "a", "python", "zebra", "xy", "queue"],
    ),
    (
        "repeat-word",
        "Repeat Word",
        "Given a word w and an integer k, print w repeated k times with no spaces.",
        "One line with w and k (1 <= k <= 10).",
        "One string.",
        "w, k = input().split()\nprint(w * int(k))\n",
        ["ab 3", "x 1", "hey 2", "z 10", "cat 4", "q 5"],
    ),
    (
        "sum-list",
        "Sum of a List",
        "Given n integers, print their sum.",
        "The first line has n; the second line has n integers.",
        "One integer.",
        "input()\nprint(sum(map(int, input().split())))\n",
        ["3\n1 2 3", "1\n5", "4\n-1 -2 3 4", "5\n0 0 0 0 0", "2\n1000000 1000000", "3\n7 -7 1"],
    ),
    (
        "count-zeros",
        "Count Zeros",
        "Given n integers, print how many are equal to zero.",
        "The first line has n; the second line has n integers.",
        "One integer.",
        "input()\nprint(sum(1 for x in input().split() if int(x) == 0))\n",
        ["3\n0 1 0", "1\n5", "4\n0 0 0 0", "5\n1 2 3 4 5", "2\n0 7", "3\n-1 0 1"],
    ),
    (
        "max-list",
        "Maximum of a List",
        "Given n integers, print the largest.",
        "The first line has n; the second line has n integers.",
        "One integer.",
        "input()\nprint(max(map(int, input().split())))\n",
        ["3\n1 2 3", "1\n5", "4\n-1 -2 -3 -4", "5\n9 2 9 4 5", "2\n0 7", "3\n-5 0 -1"],
    ),
    (
        "min-list",
        "Minimum of a List",
        "Given n integers, print the smallest.",
        "The first line has n; the second line has n integers.",
        "One integer.",
        "input()\nprint(min(map(int, input().split())))\n",
        ["3\n1 2 3", "1\n5", "4\n-1 -2 -3 -4", "5\n9 2 9 4 5", "2\n0 7", "3\n-5 0 -1"],
    ),
    (
        "range-list",
        "Spread",
        "Given n integers, print the largest minus the smallest.",
        "The first line has n; the second line has n integers.",
        "One integer.",
        "input()\na = list(map(int, input().split()))\nprint(max(a) - min(a))\n",
        ["3\n1 2 3", "1\n5", "4\n-1 -2 -3 -4", "5\n9 2 9 4 5", "2\n0 7", "3\n-5 0 -1"],
    ),
    (
        "reverse-list",
        "Reverse the List",
        "Given n integers, print them in reverse order separated by spaces.",
        "The first line has n; the second line has n integers.",
        "n integers.",
        "input()\nprint(' '.join(reversed(input().split())))\n",
        ["3\n1 2 3", "1\n5", "4\n-1 -2 -3 -4", "5\n9 2 9 4 5", "2\n0 7", "3\n-5 0 -1"],
    ),
    (
        "sort-list",
        "Sort the List",
        "Given n integers, print them in non-decreasing order separated by spaces.",
        "The first line has n; the second line has n integers.",
        "n integers.",
        "input()\nprint(' '.join(map(str, sorted(map(int, input().split())))))\n",
        ["3\n3 1 2", "1\n5", "4\n-1 -2 -3 -4", "5\n9 2 9 4 5", "2\n7 0", "3\n-5 0 -1"],
    ),
    (
        "count-positive",
        "Count Positives",
        "Given n integers, print how many are strictly positive.",
        "The first line has n; the second line has n integers.",
        "One integer.",
        "input()\nprint(sum(1 for x in input().split() if int(x) > 0))\n",
        ["3\n1 -2 3", "1\n5", "4\n-1 -2 -3 -4", "5\n0 2 9 4 5", "2\n0 7", "3\n-5 0 -1"],
    ),
    (
        "factorial",
        "Factorial",
        "Print n! (the product 1 * 2 * ... * n; 0! = 1).",
        "One integer n (0 <= n <= 20).",
        "One integer.",
        "import math\nprint(math.factorial(int(input())))\n",
        ["0", "1", "5", "10", "20", "3"],
    ),
    (
        "sum-to-n",
        "Sum 1..n",
        "Print 1 + 2 + ... + n.",
        "One integer n (1 <= n <= 10^6).",
        "One integer.",
        "n = int(input())\nprint(n * (n + 1) // 2)\n",
        ["1", "2", "10", "100", "1000000", "7"],
    ),
    (
        "count-char",
        "Count a Letter",
        "Given a word and a letter c, print how many times c occurs in the word.",
        "One line: the word, then the letter.",
        "One integer.",
        "w, c = input().split()\nprint(w.count(c))\n",
        ["banana a", "hello l", "xyz q", "aaaa a", "mississippi s", "b b"],
    ),
    (
        "is-divisible",
        "Divisible",
        "Print YES if a is divisible by b, otherwise NO.",
        "One line with a and b (b != 0).",
        "YES or NO.",
        "a, b = map(int, input().split())\nprint('YES' if a % b == 0 else 'NO')\n",
        ["10 5", "10 3", "0 7", "49 7", "13 2", "100 10"],
    ),
    (
        "leap-year",
        "Leap Year",
        "Print YES if the year y is a leap year in the Gregorian calendar, otherwise NO.",
        "One integer y (1 <= y <= 9999).",
        "YES or NO.",
        "y = int(input())\nprint('YES' if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 'NO')\n",
        ["2000", "1900", "2024", "2023", "4", "2100"],
    ),
    (
        "celsius",
        "Celsius to Fahrenheit",
        "Convert a whole number of degrees Celsius c to Fahrenheit, c * 9 / 5 + 32, and print it rounded down to an integer.",
        "One integer c.",
        "One integer.",
        "c = int(input())\nprint((c * 9) // 5 + 32)\n",
        ["0", "100", "-40", "37", "25", "-10"],
    ),
    (
        "minutes",
        "Minutes to Hours",
        "Given a number of minutes m, print hours and remaining minutes separated by a space.",
        "One integer m (0 <= m <= 10^6).",
        "Two integers.",
        "m = int(input())\nprint(m // 60, m % 60)\n",
        ["0", "59", "60", "61", "125", "1000000"],
    ),
    (
        "last-digit",
        "Last Digit",
        "Print the last decimal digit of a non-negative integer n.",
        "One integer n.",
        "One digit.",
        "print(int(input()) % 10)\n",
        ["0", "7", "123", "1000", "98765", "45"],
    ),
    (
        "digit-count",
        "Digit Count",
        "Print the number of decimal digits of a non-negative integer n.",
        "One integer n.",
        "One integer.",
        "print(len(input().strip()))\n",
        ["0", "7", "123", "1000", "98765", "1000000000000"],
    ),
    (
        "power-two",
        "Power of Two",
        "Print 2 to the power n.",
        "One integer n (0 <= n <= 60).",
        "One integer.",
        "print(2 ** int(input()))\n",
        ["0", "1", "10", "20", "60", "5"],
    ),
    (
        "count-words",
        "Count Words",
        "Print the number of words (separated by single spaces) in the line.",
        "One line of words.",
        "One integer.",
        "print(len(input().split()))\n",
        ["hello world", "a", "one two three", "x y z w v", "cppo bench train", "solo"],
    ),
    (
        "join-dash",
        "Join with Dashes",
        "Print the words of the line joined by dashes.",
        "One line of words.",
        "One line.",
        "print('-'.join(input().split()))\n",
        ["hello world", "a", "one two three", "x y z w v", "cppo bench train", "solo"],
    ),
    (
        "swap-two",
        "Swap",
        "Given two integers a and b, print b then a separated by a space.",
        "One line with a and b.",
        "Two integers.",
        "a, b = input().split()\nprint(b, a)\n",
        ["1 2", "5 5", "-1 0", "100 -100", "7 3", "0 9"],
    ),
    (
        "integer-div",
        "Quotient and Remainder",
        "Print the integer quotient and remainder of a divided by b (both non-negative, b > 0).",
        "One line with a and b.",
        "Two integers.",
        "a, b = map(int, input().split())\nprint(a // b, a % b)\n",
        ["7 2", "10 5", "0 3", "13 4", "100 7", "5 10"],
    ),
    (
        "triangle-ok",
        "Triangle Check",
        "Print YES if positive lengths a, b, c can form a triangle with positive area, otherwise NO.",
        "One line with a, b and c.",
        "YES or NO.",
        "a, b, c = sorted(map(int, input().split()))\nprint('YES' if a + b > c else 'NO')\n",
        ["3 4 5", "1 1 2", "1 2 10", "5 5 5", "2 3 4", "7 1 7"],
    ),
    (
        "count-upper",
        "Count Capitals",
        "Print how many uppercase letters the word has.",
        "One word of letters.",
        "One integer.",
        "print(sum(ch.isupper() for ch in input().strip()))\n",
        ["Hello", "abc", "ABC", "PyThOn", "x", "CamelCaseWord"],
    ),
    (
        "average-two",
        "Midpoint",
        "Print the average of two integers a and b, rounded down.",
        "One line with a and b.",
        "One integer.",
        "a, b = map(int, input().split())\nprint((a + b) // 2)\n",
        ["2 4", "1 2", "0 0", "-3 4", "100 201", "7 7"],
    ),
    (
        "multiplication-row",
        "Times Table Row",
        "Print n, 2n, ..., 5n separated by spaces.",
        "One integer n.",
        "Five integers.",
        "n = int(input())\nprint(' '.join(str(n * i) for i in range(1, 6)))\n",
        ["1", "2", "0", "-3", "10", "7"],
    ),
    (
        "count-down",
        "Count Down",
        "Print the integers from n down to 1, one per line.",
        "One integer n (1 <= n <= 100).",
        "n lines.",
        "n = int(input())\nfor i in range(n, 0, -1):\n    print(i)\n",
        ["1", "3", "5", "10", "2", "7"],
    ),
    (
        "squares-up-to",
        "Squares",
        "Print the squares 1, 4, 9, ... of 1..n separated by spaces.",
        "One integer n (1 <= n <= 100).",
        "n integers.",
        "n = int(input())\nprint(' '.join(str(i * i) for i in range(1, n + 1)))\n",
        ["1", "3", "5", "10", "2", "7"],
    ),
    (
        "bigger-word",
        "Longer Word",
        "Print the longer of two words; if they have the same length print the first.",
        "One line with two words.",
        "One word.",
        "a, b = input().split()\nprint(b if len(b) > len(a) else a)\n",
        ["cat horse", "apple pie", "ab cd", "x yz", "long short", "same four"],
    ),
    (
        "ends-with-s",
        "Plural",
        "Print YES if the word ends with the letter s, otherwise NO.",
        "One word.",
        "YES or NO.",
        "print('YES' if input().strip().endswith('s') else 'NO')\n",
        ["cats", "dog", "s", "bus", "tree", "glass"],
    ),
]


def run(code: str, stdin: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return out.stdout


def record(pid, title, task, inp, outp, ref, inputs):
    tests = []
    for i, raw in enumerate(inputs):
        stdin = raw + "\n"
        tests.append(
            {
                "input": stdin,
                "output": run(ref, stdin),
                "mode": "stdin",
                "fn_name": None,
                "kind": "public" if i == 0 else "hidden",
            }
        )
    example = tests[0]
    statement = (
        f"{task}\n\nInput\n\n{inp}\n\nOutput\n\n{outp}\n\nExample\n\nInput\n\n"
        f"{example['input']}\nOutput\n\n{example['output']}"
    )
    return demo_record(pid, title, statement, tests, ref)


def main() -> None:
    ids = [p[0] for p in P]
    assert len(ids) == len(set(ids)) and len(ids) >= 40, len(ids)
    lines = [json.dumps(record(*p), ensure_ascii=False) for p in P]
    lines += [json.dumps(call_record(*p), ensure_ascii=False) for p in CALL]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} problems -> {OUT}")


if __name__ == "__main__":
    main()
