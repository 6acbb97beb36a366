# ruff: noqa: E501  -- page markup is kept one element per line, as real sites serve it
"""Writes the held-out extraction pages (``data/extraction/heldout/``): a phpBB-style forum thread,
a Q&A page shaped like a Stack Exchange question, a French news article whose reader comments
hold most of the page's text, a Spanish Discourse-style thread, a German vBulletin-style one and
an Italian question answered in a WordPress site's comments.
Written after the reader's post-sequence rule, to check it on markup it was not developed on.
Honest history: the rule's second shape (all posts present, with user boxes between them) was
added after forum_varnish_en first scored 0.795, so that page is no longer held out; the Spanish
and German threads were written after that and first measured without any change (1.000 and
0.757); the Italian page was written right after the pruned-posts rule, by its author (1.000;
0.242 before the rule); see ``data/extraction/heldout/README.md`` for what changed after.

    python benchmarks/_heldout_pages.py   # rewrites the .html/.txt pairs

The text is our own words. Each gold ``.txt`` is built from the same lists as the page, one
paragraph (or line of a post) per line, so it matches the page exactly; what counts as main text
follows ``data/extraction/README.md`` (forum posts and Q&A answers are the content; comment
threads under posts, user cards, votes and quotes' "X wrote:" lines are not).
"""

from __future__ import annotations

import html
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data" / "extraction" / "heldout"
E = html.escape


def _menu(n: int, prefix: str) -> str:
    items = "".join(f'<li><a href="/{prefix}/{i}">{prefix.title()} section {i}</a></li>' for i in range(n))
    return f"<ul class='menu'>{items}</ul>"


def _chrome_script(kb: int) -> str:
    state = ",".join(f'{{"id":{i},"k":"v{i * 31 % 997}"}}' for i in range(kb * 1024 // 24))
    return f"<script>window.__APP__={{\"cache\":[{state}]}};</script>"


# ------------------------------------------------------------------ 1. forum thread (phpBB-like)

FORUM_POSTS = [
    ("harbourwatch", ["I restore small wooden dinghies in a shed by the estuary, and this winter the varnish on two "
                      "transoms turned milky within a week of the last coat.",
                      "The shed is unheated and the tide brings fog most mornings. I thinned the varnish ten percent "
                      "with the maker's thinner and laid it on at about eight degrees.",
                      "Is the milkiness moisture trapped under the film, and can I save the finish without stripping "
                      "back to bare wood?"]),
    ("oarsandadze", ["Milky patches a few days after coating are almost always moisture. Varnish that cures below "
                     "ten degrees in damp air stays soft for days, and the water vapour gets into the film before it "
                     "skins over.",
                     "If the bloom is only in the top coat, a light rub with fine abrasive paper and a fresh coat on "
                     "a dry, mild day usually clears it. If the wood underneath has gone grey, you have to strip."]),
    ("harbourwatch", ["The wood under it still looks honey coloured, so it seems to be the top coat only.",
                      "How warm does the shed need to be? I can borrow an oil-filled radiator but not a proper heater."]),
    ("mainsheet_meg", ["An oil-filled radiator is ideal because it gives off no water vapour, unlike a paraffin or gas "
                       "heater, which puts a surprising amount of water into the air as it burns.",
                       "Aim for fifteen degrees for a day before you coat and two days after. Keep the door shut "
                       "during the first six hours so no fog drifts in while the surface is tacky.",
                       "I also leave a cheap hygrometer on the bench. Below sixty percent humidity I varnish; above "
                       "seventy I find something else to do."]),
    ("tiller_ted", ["Also check the thinner. Some brands of white spirit carry more water than you would think, and "
                    "a cloudy thinner gives a cloudy coat however warm the shed is.",
                    "I switched to the thinner sold by the varnish maker and the problem went away on my clinker "
                    "pram."]),
    ("oarsandadze", ["Good point from tiller_ted. And never shake a can of varnish: stir it slowly. Bubbles and "
                     "dissolved air make the film look hazy even in a dry room."]),
    ("harbourwatch", ["Update after two weekends. I sanded the transoms with 320 paper until the haze was gone, ran "
                      "the radiator from Friday evening, and put on two thin coats on Saturday and Sunday.",
                      "The hygrometer read fifty five percent both days. The finish is clear and hard, with no bloom "
                      "at all.",
                      "Thanks everyone, especially for the tip about the gas heater; I had been using one in the "
                      "autumn and never connected it with the trouble."]),
    ("quayside_quill", ["Glad it worked. For anyone finding this thread later: the same applies to oil-based paints on "
                        "topsides. Warm, dry air while the film cures matters more than the brand you buy."]),
]


def forum_page() -> tuple[str, str]:
    rng = random.Random(3)
    posts, gold = [], []
    title = "Varnish turning milky on a restored transom"
    for i, (user, paras) in enumerate(FORUM_POSTS):
        quote = ""
        if i == 3:
            quote = (f"<blockquote><div><cite>{FORUM_POSTS[2][0]} wrote:</cite>"
                     f"{E(FORUM_POSTS[2][1][1])}</div></blockquote>")
            gold.append(FORUM_POSTS[2][1][1])
        body = "<br><br>".join(E(p) for p in paras)
        gold.extend(paras)
        n_posts = rng.randint(12, 3000)
        posts.append(f"""
<div id="p{1000 + i}" class="post has-profile bg{1 + i % 2}"><div class="inner">
<dl class="postprofile" id="profile{1000 + i}"><dt class="has-profile-rank"><a href="/member/{user}" class="username">{user}</a></dt>
<dd class="profile-rank">{"Admiral" if n_posts > 1000 else "Deckhand"}</dd><dd class="profile-posts"><strong>Posts:</strong> <a href="/search?author={user}">{n_posts}</a></dd>
<dd class="profile-joined"><strong>Joined:</strong> {rng.choice(["Mon", "Tue", "Fri"])} Mar {rng.randint(1, 28):02d}, 20{rng.randint(10, 22)} 7:{rng.randint(10, 59)} pm</dd>
<dd class="profile-location"><strong>Location:</strong> {rng.choice(["Solent", "Falmouth", "Clyde", "Essex marshes"])}</dd></dl>
<div class="postbody"><div id="post_content{1000 + i}">
<h3{" class='first'" if i == 0 else ""}><a href="#p{1000 + i}">{"Re: " if i else ""}{title}</a></h3>
<ul class="post-buttons"><li><a href="/posting?mode=quote&amp;p={1000 + i}" title="Reply with quote" class="button"><span>Quote</span></a></li></ul>
<p class="author"><a class="unread" href="#p{1000 + i}" title="Post"><span>Post</span></a> by <strong><a href="/member/{user}" class="username">{user}</a></strong> &raquo; Sat Jan {10 + i:02d}, 2024 {8 + i}:{rng.randint(10, 59)} am</p>
<div class="content">{quote}{body}</div>
<div id="sig{1000 + i}" class="signature">{E(rng.choice(["Fair winds.", "Currently restoring: 12 ft clinker pram, 1958", "Varnish is a way of life, not a finish."]))}</div>
</div></div>
<div class="back2top"><a href="#top" class="top" title="Top">Top</a></div>
</div></div>
<hr class="divider" />""")
    page = f"""<!DOCTYPE html>
<html dir="ltr" lang="en-gb"><head><meta charset="utf-8" /><title>{title} - Dinghy Restoration - Tideline Boatbuilders Forum</title>
<link href="./styles/prosilver/theme/stylesheet.css?assets_version=84" rel="stylesheet">{_chrome_script(6)}</head>
<body id="phpbb" class="nojs notouch section-viewtopic ltr">
<div id="wrap" class="wrap"><a id="top" class="top-anchor" accesskey="t"></a>
<div id="page-header"><div class="headerbar" role="banner"><div class="inner"><div id="site-description" class="site-description">
<a id="logo" class="logo" href="./index.php" title="Board index"><span class="site_logo"></span></a>
<h1>Tideline Boatbuilders Forum</h1><p>Wooden boats, traditional skills, and the people who keep them afloat</p></div>
<div id="search-box" class="search-box search-header" role="search"><form action="./search.php" method="get" id="search">
<fieldset><input name="keywords" id="keywords" type="search" maxlength="128" title="Search for keywords" class="inputbox search tiny" size="20" value="" placeholder="Search…" />
<button class="button button-search" type="submit" title="Search">Search</button></fieldset></form></div></div></div>
<div class="navbar" role="navigation"><div class="inner">{_menu(14, "forum")}
<ul id="nav-breadcrumbs" class="nav-breadcrumbs linklist navlinks" role="menubar"><li class="breadcrumbs"><span class="crumb"><a href="./index.php">Board index</a></span>
<span class="crumb"><a href="./viewforum.php?f=4">Restoration</a></span><span class="crumb"><a href="./viewforum.php?f=9">Dinghy Restoration</a></span></li></ul></div></div></div>
<div id="page-body" class="page-body" role="main">
<h2 class="topic-title"><a href="./viewtopic.php?t=5521">{title}</a></h2>
<div class="action-bar bar-top"><a href="./posting.php?mode=reply&amp;t=5521" class="button" title="Post a reply"><span>Post Reply</span></a>
<div class="pagination">{len(FORUM_POSTS)} posts &bull; Page <strong>1</strong> of <strong>1</strong></div></div>
{"".join(posts)}
<div class="action-bar bar-bottom"><a href="./posting.php?mode=reply&amp;t=5521" class="button"><span>Post Reply</span></a></div>
<div class="stat-block online-list"><h3>Who is online</h3><p>Users browsing this forum: harbourwatch, Bing [Bot] and 11 guests</p></div>
<div class="similar-topics"><h3>Similar topics</h3><ul>{"".join(f"<li><a href='/t/{k}'>Varnish question number {k}</a></li>" for k in range(12))}</ul></div>
</div>
<div id="page-footer" class="page-footer" role="contentinfo"><div class="navbar" role="navigation">{_menu(10, "help")}</div>
<div class="copyright"><p class="footer-row"><span class="footer-copyright">Powered by phpBB&reg; Forum Software &copy; phpBB Limited</span></p>
<p class="footer-row" role="menu"><a class="footer-link" href="./ucp.php?mode=privacy" title="Privacy" role="menuitem"><span class="footer-link-text">Privacy</span></a> | <a class="footer-link" href="./ucp.php?mode=terms" title="Terms" role="menuitem"><span class="footer-link-text">Terms</span></a></p></div></div>
</div></body></html>"""
    return page, "\n".join(gold) + "\n"


# ------------------------------------------------------------------ 2. Q&A page

QUESTION = ["My kitchen sourdough rises well for the first three hours and then collapses in the oven, "
            "leaving a flat loaf with a tight crumb at the bottom and big holes near the crust.",
            "I use 500 g of strong white flour, 350 g of water, 100 g of starter and 10 g of salt. The dough "
            "proves at room temperature, around twenty four degrees, for about five hours before baking in a "
            "Dutch oven at 240 degrees.",
            "What makes a loaf that rises so well collapse as soon as it goes into the heat?"]
ANSWERS = [
    (57, ["A loaf that rises well and then falls in the oven is almost always over-proofed. The gluten "
          "network has been stretched by gas for so long that it can no longer hold the last burst of "
          "expansion, and the structure gives way.",
          "At twenty four degrees, five hours is a long bulk ferment plus proof for a dough with twenty percent "
          "starter. Try cutting the total to three and a half hours, or shape it after bulk and put it in the "
          "fridge overnight, then bake straight from cold.",
          "The poke test helps: press a floured finger into the dough. If the dent springs back slowly and "
          "only partly, bake. If it stays, it has gone too far."]),
    (23, ["Your hydration is seventy percent, which is fine for strong flour, but weak shaping makes "
          "over-proofing look worse. Without surface tension the loaf spreads instead of rising when the "
          "oven spring comes.",
          "Do a pre-shape, rest twenty minutes, then a tight final shape, and you will see a taller loaf even "
          "with the same timing."]),
    (9, ["Check the starter too. A very acidic starter, one that has sat a long time since its last feed, "
         "weakens gluten. Feed it eight to twelve hours before mixing and use it at its peak, when it has "
         "doubled and is domed rather than sunken."]),
    (4, ["For what it is worth I had exactly this problem in summer. Reducing the starter from twenty to ten "
         "percent of the flour weight fixed it without changing anything else, because the dough simply "
         "ferments more slowly."]),
]
COMMENTS = ["Did you score the loaf before baking?", "Yes, one slash about a centimetre deep.",
            "This worked for me too, thanks.", "The fridge trick changed my baking.",
            "What flour brand do you use?", "Great answer, very clear explanation of the poke test."]


def _qa_post(kind: str, votes: int, paras: list[str], rng: random.Random, accepted: bool = False) -> str:
    body = "".join(f"<p>{E(p)}</p>" for p in paras)
    comments = "".join(f'<li class="comment js-comment"><div class="comment-score">{rng.randint(0, 9)}</div>'
                       f'<div class="comment-text"><span class="comment-copy">{E(rng.choice(COMMENTS))}</span> '
                       f'&ndash; <a href="/users/{rng.randint(100, 999)}" class="comment-user">crumbfan{rng.randint(1, 99)}</a>'
                       f' <span class="comment-date">Mar {rng.randint(1, 28)}, 2023 at {rng.randint(1, 23)}:{rng.randint(10, 59)}</span></div></li>'
                       for _ in range(rng.randint(1, 3)))
    user = f"baker{rng.randint(1000, 9999)}"
    return f"""
<div class="{kind}{' accepted-answer' if accepted else ''} js-{kind}" data-score="{votes}"><div class="post-layout">
<div class="votecell post-layout--left"><div class="js-voting-container"><button class="js-vote-up-btn" aria-label="Up vote">Up</button>
<div class="js-vote-count" itemprop="upvoteCount">{votes}</div><button class="js-vote-down-btn" aria-label="Down vote">Down</button>
{"<div class='js-accepted-answer-indicator' title='Accepted'>Accepted</div>" if accepted else ""}</div></div>
<div class="postcell post-layout--right"><div class="s-prose js-post-body" itemprop="text">{body}</div>
<div class="mt24"><div class="post-menu"><a href="/q/1/share">Share</a> <a href="/posts/1/edit">Improve this {kind}</a> <button>Follow</button></div>
<div class="post-signature"><div class="user-info"><div class="user-action-time">{kind}ed Mar {rng.randint(1, 28)}, 2023 at {rng.randint(1, 23)}:{rng.randint(10, 59)}</div>
<div class="user-details"><a href="/users/{rng.randint(10, 9999)}/{user}">{user}</a><div class="-flair"><span class="reputation-score">{rng.randint(1, 90)},{rng.randint(100, 999)}</span></div></div></div></div></div>
<div class="comments js-comments-container"><ul class="comments-list js-comments-list">{comments}</ul>
<a class="js-add-link comments-link" href="#">Add a comment</a></div></div></div></div>"""


def qa_page() -> tuple[str, str]:
    rng = random.Random(5)
    title = "Why does my sourdough collapse in the oven after a good rise?"
    answers = "".join(_qa_post("answer", v, p, rng, accepted=(i == 0)) for i, (v, p) in enumerate(ANSWERS))
    hot = "".join(f'<li><a href="/q/{k}" class="question-hyperlink">A question about bread number {k} and its crumb</a></li>'
                  for k in range(30))
    page = f"""<!DOCTYPE html>
<html class="html__responsive" lang="en"><head><meta charset="utf-8"><title>baking - {title} - Kitchen Craft Stack</title>
<meta property="og:title" content="{title}">{_chrome_script(10)}</head>
<body class="question-page unified-theme"><div id="notify-container"></div>
<header class="s-topbar"><div class="s-topbar--container"><a href="/" class="s-topbar--logo"><span>Kitchen Craft Stack</span></a>
<ol class="s-navigation"><li><a href="/about">About</a></li><li><a href="/questions">Questions</a></li><li><a href="/tags">Tags</a></li></ol>
<form id="search" role="search" class="s-topbar--searchbar" action="/search"><input name="q" type="text" placeholder="Search…" class="s-input"></form></div></header>
<div class="container"><div id="left-sidebar" class="left-sidebar"><nav role="navigation">{_menu(12, "nav")}</nav></div>
<div id="content" class="snippet-hidden"><div id="question-header"><h1 itemprop="name"><a href="/questions/4411" class="question-hyperlink">{title}</a></h1>
<a href="/questions/ask" class="ws-nowrap s-btn s-btn__primary">Ask Question</a></div>
<div class="d-flex"><div title="2023-03-02">Asked <time>1 year ago</time></div><div>Modified <a href="?lastactivity">3 months ago</a></div><div>Viewed 18k times</div></div>
<div id="mainbar" role="main" aria-label="question and answers">
{_qa_post("question", 31, QUESTION, rng)}
<div id="answers"><div id="answers-header"><h2 class="mb0">{len(ANSWERS)} Answers</h2><div class="sorted-by">Sorted by: Highest score (default)</div></div>
{answers}</div>
<h2 class="bottom-notice">Not the answer you're looking for? Browse other questions tagged <a href="/tags/sourdough" class="post-tag">sourdough</a> or <a href="/questions/ask">ask your own question</a>.</h2></div>
<div id="sidebar" class="show-votes" role="complementary" aria-label="sidebar"><div class="s-sidebarwidget s-sidebarwidget__yellow"><ul>
<li class="s-sidebarwidget--header">The Overflow Blog</li><li><a href="/blog/1">How bakers learned to love the spreadsheet</a></li><li><a href="/blog/2">Crumb shots: a retrospective</a></li></ul></div>
<div class="module sidebar-linked"><h4 id="h-linked">Linked</h4><div class="linked">{hot[:1200]}</div></div>
<div id="hot-network-questions" class="module tex2jax_ignore"><h4><a href="/hot">Hot Network Questions</a></h4><ul>{hot}</ul></div></div>
</div></div>
<footer id="footer" class="site-footer" role="contentinfo"><div class="site-footer--container">{_menu(16, "footer")}
<p class="site-footer--copyright">Site design / logo &copy; 2024 Kitchen Craft Stack; user contributions licensed under CC BY-SA.</p></div></footer>
</body></html>"""
    gold = QUESTION + [p for _, paras in ANSWERS for p in paras]
    return page, "\n".join(gold) + "\n"


# ------------------------------------------------------------------ 3. news article with many comments (fr)

ARTICLE_FR = [
    "La commune de Port-Verdel a inauguré samedi la nouvelle passerelle piétonne qui relie le quai des "
    "Pêcheurs à l'île aux Mouettes, après dix-huit mois de travaux.",
    "Longue de cent quarante mètres, la passerelle repose sur six piles en béton fondées dans la vase du "
    "chenal. Son tablier en bois de mélèze, traité sans produit chimique, doit durer une trentaine d'années.",
    "Le chantier a coûté 4,2 millions d'euros, dont un tiers financé par la région. Le maire, Hélène Carvin, "
    "a rappelé que l'île n'était accessible jusqu'ici qu'à marée basse, par un gué dangereux.",
    "Une partie centrale de vingt mètres pivote pour laisser passer les voiliers. La manœuvre, commandée "
    "depuis la capitainerie, prend quatre minutes et aura lieu six fois par jour en été.",
    "Les associations de protection des oiseaux avaient demandé que l'éclairage nocturne soit limité. La "
    "passerelle n'est donc éclairée que par des bornes basses à lumière ambrée, éteintes entre minuit et six heures.",
    "Les premiers promeneurs ont salué la vue sur l'estuaire. Certains commerçants du quai craignent en "
    "revanche que la circulation des vélos, autorisée à vitesse réduite, ne gêne les terrasses.",
    "Un comptage automatique sera installé en septembre pour mesurer la fréquentation, estimée par la "
    "mairie à deux mille passages par jour pendant la saison.",
]
COMMENTS_FR = [
    "Enfin ! Cela fait vingt ans qu'on attend de pouvoir aller sur l'île sans regarder l'horaire des marées.",
    "Quatre millions pour une passerelle, alors que la piscine municipale est fermée depuis trois ans. Il y "
    "a des priorités que je ne comprends pas.",
    "Je suis passé dimanche avec les enfants, c'est vraiment réussi. Le bois est beau et on voit les phoques "
    "sur le banc de sable à marée basse.",
    "Les vélos sur une passerelle de deux mètres cinquante de large, ça va mal finir en août.",
    "Bravo aux ouvriers qui ont travaillé tout l'hiver dans le vent. Ce n'était pas un chantier facile.",
    "La partie tournante est une très bonne idée, les plaisanciers avaient peur de perdre l'accès au port du haut.",
    "Qui va payer l'entretien du bois dans dix ans ? Le mélèze, ça grise et ça glisse quand il pleut.",
    "Les bornes ambrées sont discrètes, on voit encore les étoiles depuis la pointe. Merci d'avoir écouté les associations.",
    "Il faudrait maintenant un parking à vélos à l'entrée, sinon tout le monde va les accrocher aux rambardes.",
    "J'habite sur le quai et le bruit des promeneurs le soir commence déjà à se faire sentir.",
    "Superbe réalisation, on en parlait même à la radio nationale ce matin.",
    "Je regrette le gué, c'était une aventure à chaque traversée. Mais c'est vrai qu'il y avait des accidents.",
]


def news_comments_page() -> tuple[str, str]:
    rng = random.Random(7)
    title = "Port-Verdel : la passerelle de l'île aux Mouettes est ouverte"
    comments = []
    for k in range(36):  # more comment text than article text, as under a popular local story
        text = COMMENTS_FR[k % len(COMMENTS_FR)]
        if k >= len(COMMENTS_FR):
            text = f"{text} {rng.choice(COMMENTS_FR)}"
        comments.append(f"""<li class="comment" id="comment-{5000 + k}"><article class="comment-body">
<footer class="comment-meta"><div class="comment-author vcard"><img class="avatar" src="/a/{k}.png" alt=""><b class="fn">{rng.choice(["Marc", "Lucie", "Yann", "Odile", "Soizic", "Paul"])}{rng.randint(1, 99)}</b></div>
<div class="comment-metadata"><a href="#comment-{5000 + k}"><time>{rng.randint(1, 28)} juin 2024 à {rng.randint(7, 23)} h {rng.randint(10, 59)}</time></a></div></footer>
<div class="comment-content"><p>{E(text)}</p></div>
<div class="reply"><a rel="nofollow" class="comment-reply-link" href="#respond">Répondre</a> <a href="#" class="report">Signaler</a></div></article></li>""")
    body = "".join(f"<p>{E(p)}</p>" for p in ARTICLE_FR[:3])
    body += '<div class="pub-inline"><span>Publicité</span><a href="https://ads.invalid/x">Assurance bateau : devis en 2 minutes</a></div>'
    body += "".join(f"<p>{E(p)}</p>" for p in ARTICLE_FR[3:5])
    body += '<aside class="lire-aussi"><b>Lire aussi</b> <a href="/a/1">Le gué de l\'île aux Mouettes, une histoire de naufrages</a></aside>'
    body += "".join(f"<p>{E(p)}</p>" for p in ARTICLE_FR[5:])
    page = f"""<!DOCTYPE html>
<html lang="fr-FR"><head><meta charset="UTF-8"><title>{title} - L'Écho de l'Estuaire</title>
<meta property="og:title" content="{title}"><script type="application/ld+json">{{"@type":"NewsArticle","headline":"{title}"}}</script>{_chrome_script(8)}</head>
<body class="post-template-default single single-post">
<div id="didomi-host"><div class="consent-banner"><p>Nous utilisons des cookies pour améliorer votre expérience et mesurer l'audience.</p><button>Accepter</button><button>Paramétrer</button></div></div>
<header id="masthead" class="site-header"><div class="site-branding"><p class="site-title"><a href="/">L'Écho de l'Estuaire</a></p></div>
<nav id="site-navigation" class="main-navigation">{_menu(18, "rubrique")}</nav><a href="/abonnement" class="btn-abo">Je m'abonne</a></header>
<div id="content" class="site-content"><main id="main" class="site-main">
<article id="post-8812" class="post-8812 post type-post status-publish format-standard category-port-verdel">
<header class="entry-header"><div class="breadcrumbs"><a href="/">Accueil</a> › <a href="/c/port-verdel">Port-Verdel</a></div>
<h1 class="entry-title">{title}</h1><div class="entry-meta">Par <a href="/auteur/jb">Jeanne Bréval</a> · Publié le 15 juin 2024 à 18 h 02 · Mis à jour le 16 juin 2024</div></header>
<figure class="wp-block-image"><img src="/img/passerelle.jpg" alt=""><figcaption>La passerelle vue depuis la pointe de l'île. Photo L'Écho</figcaption></figure>
<div class="entry-content">{body}</div>
<footer class="entry-footer"><div class="share"><a href="#">Partager sur Facebook</a> <a href="#">X</a> <a href="#">WhatsApp</a> <a href="#">Copier le lien</a></div>
<div class="tags"><a href="/t/passerelle">passerelle</a> <a href="/t/ile-aux-mouettes">île aux Mouettes</a> <a href="/t/travaux">travaux</a></div></footer></article>
<section class="related"><h2>À lire aussi</h2><ul>{"".join(f'<li><a href="/a/{k}">Port-Verdel : un autre article de la rubrique, numéro {k}</a></li>' for k in range(8))}</ul></section>
<div id="comments" class="comments-area"><h2 class="comments-title">{len(comments)} réflexions sur « {title} »</h2>
<ol class="comment-list">{"".join(comments)}</ol>
<div id="respond" class="comment-respond"><h3 id="reply-title" class="comment-reply-title">Laisser un commentaire</h3>
<form action="/wp-comments-post.php" method="post" id="commentform" class="comment-form"><p class="comment-notes">Votre adresse e-mail ne sera pas publiée.</p>
<textarea id="comment" name="comment" cols="45" rows="8"></textarea><input name="submit" type="submit" id="submit" class="submit" value="Publier"></form></div></div>
</main><aside id="secondary" class="widget-area"><section class="widget widget_recent"><h2 class="widget-title">Les plus lus</h2><ul>{"".join(f'<li><a href="/a/{k}">Article très lu numéro {k} de la semaine</a></li>' for k in range(10))}</ul></section></aside></div>
<footer id="colophon" class="site-footer">{_menu(12, "pied")}<p>© 2024 L'Écho de l'Estuaire. Tous droits réservés.</p></footer>
</body></html>"""
    return page, "\n".join(ARTICLE_FR) + "\n"


# ------------------------------------------------------------------ 4. Discourse-style thread (es)

DISCOURSE_POSTS = [
    ("ruth_pedal", ["Hace dos semanas cambié la cadena de mi bicicleta de gravel y desde entonces salta en los "
                    "piñones pequeños cuando pedaleo de pie en las subidas.",
                    "El cassette tiene unos seis mil kilómetros y los platos parecen en buen estado. ¿Tengo que "
                    "cambiar también el cassette o puede ser un problema de ajuste del cambio?"]),
    ("taller_nortes", ["Casi seguro que es el cassette. Una cadena nueva sobre piñones gastados salta justo en los "
                       "que más has usado, y con seis mil kilómetros los pequeños suelen estar ya redondeados.",
                       "Antes de comprar nada, mide la cadena vieja con un medidor de desgaste. Si pasaba del 0,75 "
                       "por ciento, el cassette se ha gastado con ella y hay que cambiarlos juntos."]),
    ("pilar_mtb", ["Yo añadiría revisar la tensión del cable del desviador trasero. Media vuelta del tensor en "
                   "el mando a veces basta para que deje de saltar, sobre todo si la cadena nueva es de otra marca."]),
    ("ruth_pedal", ["Medí la cadena vieja: estaba en el uno por ciento. Así que cassette nuevo.",
                    "Lo he montado hoy con la cadena que ya había comprado y he hecho la subida del puerto dos "
                    "veces de pie sin un solo salto. Gracias a los dos."]),
    ("taller_nortes", ["Perfecto. Para la próxima vez: si cambias la cadena cuando llega al 0,5 por ciento, el "
                       "cassette aguanta dos o tres cadenas y sale mucho más barato."]),
]


def discourse_page() -> tuple[str, str]:
    """Written after the last change to the reader's rules, and measured without changing them."""
    rng = random.Random(11)
    title = "La cadena nueva salta en los piñones pequeños"
    posts, gold = [], []
    for i, (user, paras) in enumerate(DISCOURSE_POSTS):
        gold.extend(paras)
        cooked = "".join(f"<p>{E(p)}</p>" for p in paras)
        likes = rng.randint(0, 14)
        posts.append(f"""
<div class="topic-post clearfix regular" data-post-number="{i + 1}"><article id="post_{i + 1}" aria-label="publicación #{i + 1} de {user}" role="region" data-post-id="{7700 + i}" data-topic-id="312" data-user-id="{50 + i}" class="boxed onscreen-post">
<div class="row"><div class="topic-avatar"><div class="post-avatar"><a class="trigger-user-card main-avatar" href="/u/{user}" data-user-card="{user}" aria-hidden="true"><img alt="" width="48" height="48" src="/user_avatar/{user}/48.png" class="avatar"></a></div></div>
<div class="topic-body clearfix"><div role="heading" aria-level="2" class="topic-meta-data"><div class="names trigger-user-card"><span class="first username"><a href="/u/{user}" data-user-card="{user}">{user}</a></span>
<span class="user-title">{rng.choice(["Ciclista habitual", "Mecánico", "Nuevo miembro"])}</span></div>
<div class="post-infos"><div class="post-info post-date"><a class="post-date" href="/t/312/{i + 1}"><span title="{rng.randint(1, 28)} mar 2024 {rng.randint(8, 22)}:{rng.randint(10, 59)}" class="relative-date">{rng.randint(1, 20)} d</span></a></div></div></div>
<div class="regular contents"><div class="cooked">{cooked}</div>
<section class="post-menu-area clearfix"><nav class="post-controls"><div class="actions"><button class="widget-button btn-flat like" title="me gusta">{likes or ""} Me gusta</button>
<button class="widget-button btn-flat share" title="compartir enlace">Compartir</button><button class="widget-button btn-flat reply create" title="responder">Responder</button></div></nav></section></div>
<section class="post-actions"></section><div class="post-links-container"></div></div></div></article></div>""")
    suggested = "".join(f'<tr class="topic-list-item"><td class="main-link"><a href="/t/{k}" class="title">Tema sugerido número {k} sobre transmisiones</a></td><td class="posts">{k + 3}</td></tr>'
                        for k in range(10))
    page = f"""<!DOCTYPE html>
<html lang="es" class="desktop-view not-mobile-device text-size-normal anon"><head><meta charset="utf-8"><title>{title} - Mecánica - Foro Rodadas</title>
<meta property="og:title" content="{title}"><meta property="og:site_name" content="Foro Rodadas">{_chrome_script(12)}</head>
<body class="crawler"><header class="d-header"><div class="wrap"><div class="contents"><div class="title"><a href="/"><img src="/logo.png" alt="Foro Rodadas" id="site-logo"></a></div>
<div class="panel"><button class="btn sign-up-button">Registrarse</button><button class="btn login-button">Iniciar sesión</button></div></div></div></header>
<div id="main-outlet" class="wrap" role="main"><div class="sidebar-wrapper"><div class="sidebar-sections">{_menu(16, "categoria")}</div></div>
<div id="topic-title"><div class="title-wrapper"><h1 data-topic-id="312"><a href="/t/312">{title}</a></h1>
<div class="topic-category"><span class="badge-category__name">Mecánica</span> <a class="discourse-tag" href="/tag/cadena">cadena</a> <a class="discourse-tag" href="/tag/cassette">cassette</a></div></div></div>
<div class="container posts"><div class="topic-timeline"><div class="timeline-scrollarea">1 / {len(DISCOURSE_POSTS)}</div></div>
<section class="topic-area" id="topic" data-topic-id="312"><div class="posts-wrapper">{"".join(posts)}</div></section>
<div class="topic-map"><ul class="clearfix"><li><h4>creado</h4>mar 2024</li><li><h4>última respuesta</h4>mar 2024</li><li><h4>respuestas</h4>{len(DISCOURSE_POSTS) - 1}</li><li><h4>vistas</h4>{rng.randint(200, 900)}</li></ul></div>
<div class="more-topics__container"><h3 class="suggested-topics-message">Temas sugeridos</h3><table class="topic-list">{suggested}</table></div></div></div>
<footer class="footer"><div class="wrap">{_menu(8, "ayuda")}<p>Funciona con Discourse, se ve mejor con JavaScript habilitado</p></div></footer>
</body></html>"""
    return page, "\n".join(gold) + "\n"


# ------------------------------------------------------------------ 5. vBulletin-style thread (de)

VB_POSTS = [
    ("Fliesenfuchs", ["Im Bad unseres Altbaus löst sich an der Duschwand die Silikonfuge nach jedem Winter, und "
                      "dahinter wird die Wand schwarz.",
                      "Die Fuge ist jetzt das dritte Mal erneuert worden. Liegt das am Material oder machen wir "
                      "beim Verfugen etwas falsch?"]),
    ("Estrichleger_Jo", ["Eine Silikonfuge ist eine Wartungsfuge und hält selten länger als ein paar Jahre, aber "
                         "jeden Winter ist zu oft. Meist haftet das Silikon an drei Seiten statt an zwei, weil "
                         "hinten keine Rundschnur liegt.",
                         "Dann kann die Fuge den Bewegungen zwischen Wand und Wanne nicht folgen und reißt an der "
                         "schwächsten Stelle ab. Wasser läuft dahinter, und der Schimmel kommt von dort."]),
    ("Fliesenfuchs", ["Eine Rundschnur hatten wir tatsächlich nie drin. Welchen Durchmesser nimmt man?"]),
    ("Estrichleger_Jo", ["Etwa ein Viertel größer als die Fugenbreite, damit sie stramm sitzt. Bei einer "
                         "Fuge von acht Millimetern also eine Schnur mit zehn Millimetern.",
                         "Wichtig ist auch, die Wanne beim Verfugen mit Wasser zu füllen. Sonst senkt sie sich "
                         "später unter dem Gewicht und zieht die frische Fuge auf."]),
    ("Sanitaer-Susi", ["Und bitte ein Sanitärsilikon mit Fungizid verwenden und die alte Fuge vorher komplett "
                       "entfernen, auch die Reste in den Poren der Fliesenkante. Schimmelsporen unter der neuen Fuge "
                       "wachsen sonst einfach weiter."]),
]


def vbulletin_page() -> tuple[str, str]:
    """Written after the last change to the reader's rules, and measured without changing them."""
    rng = random.Random(13)
    title = "Silikonfuge an der Dusche reißt jeden Winter"
    posts, gold = [], []
    for i, (user, paras) in enumerate(VB_POSTS):
        gold.extend(paras)
        body = "<br />\n<br />\n".join(E(p) for p in paras)
        pid = 88100 + i
        posts.append(f"""
<div id="edit{pid}" style="padding:0px 0px 6px 0px"><table class="tborder" id="post{pid}" cellpadding="6" cellspacing="0" border="0" width="100%" align="center">
<tr><td class="thead" style="font-weight:normal; border: 1px solid #D1D1E1; border-right: 0px"><a name="post{pid}"><img class="inlineimg" src="images/statusicon/post_old.gif" alt="Alt" border="0" /></a> {rng.randint(1, 28)}.02.2024, {rng.randint(7, 22)}:{rng.randint(10, 59)}</td>
<td class="thead" style="font-weight:normal; border: 1px solid #D1D1E1; border-left: 0px" align="right">&nbsp;#<a href="showpost.php?p={pid}&amp;postcount={i + 1}" target="new" id="postcount{pid}" name="{i + 1}"><strong>{i + 1}</strong></a></td></tr>
<tr valign="top"><td class="alt2" width="175" style="border: 1px solid #D1D1E1; border-top: 0px; border-bottom: 0px">
<div id="postmenu_{pid}"><a class="bigusername" href="member.php?u={300 + i}">{user}</a></div>
<div class="smallfont">{rng.choice(["Erfahrener Benutzer", "Neuer Benutzer", "Moderator"])}</div>
<div class="smallfont">&nbsp;<br /><div>Registriert seit: {rng.choice(["Jan", "Apr", "Okt"])} 20{rng.randint(8, 20):02d}</div><div>Ort: {rng.choice(["Kassel", "Bremen", "Passau"])}</div><div>Beiträge: {rng.randint(5, 4000)}</div></div></td>
<td class="alt1" id="td_post_{pid}" style="border-right: 1px solid #D1D1E1">
<div class="smallfont"><img class="inlineimg" src="images/icons/icon1.gif" alt="Standard" border="0" /> <strong>{"AW: " if i else ""}{title}</strong></div><hr size="1" style="color:#D1D1E1; background-color:#D1D1E1" />
<div id="post_message_{pid}">{body}</div>
{"<div>__________________<br />Wer misst, misst Mist.</div>" if user == "Estrichleger_Jo" else ""}
<div style="margin-top: 10px" align="right"><a href="report.php?p={pid}" rel="nofollow"><img class="inlineimg" src="images/buttons/report.gif" alt="Beitrag melden" border="0" /></a></div></td></tr>
<tr><td class="alt2" style="border: 1px solid #D1D1E1; border-top: 0px"><img class="inlineimg" src="images/statusicon/user_offline.gif" alt="{user} ist offline" border="0" /></td>
<td class="alt1" align="right" style="border: 1px solid #D1D1E1; border-left: 0px; border-top: 0px"><a href="newreply.php?do=newreply&amp;p={pid}" rel="nofollow"><img src="images/buttons/quote.gif" alt="Mit Zitat antworten" border="0" /></a></td></tr>
</table></div>""")
    similar = "".join(f'<tr><td class="alt1" align="left"><span class="smallfont"><a href="showthread.php?t={k}">Ähnliches Thema {k}: Fugen im Bad</a></span></td><td class="alt2" nowrap="nowrap"><span class="smallfont">Bad &amp; Sanitär</span></td><td class="alt1" align="center"><span class="smallfont">{k + 2}</span></td></tr>'
                      for k in range(10))
    page = f"""<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml" dir="ltr" lang="de"><head><meta http-equiv="Content-Type" content="text/html; charset=utf-8" /><title>{title} - Heimwerker-Forum</title>{_chrome_script(9)}</head>
<body><a name="top"></a><table border="0" width="100%" cellpadding="0" cellspacing="0" align="center"><tr><td align="left"><a href="index.php"><img src="images/misc/logo.gif" border="0" alt="Heimwerker-Forum" /></a></td>
<td align="right"><form action="login.php?do=login" method="post"><input type="text" class="bginput" name="vb_login_username" size="10" /><input type="submit" class="button" value="Anmelden" /></form></td></tr></table>
<div class="page" style="width:100%; text-align:left"><div style="padding:0px 25px 0px 25px" align="left">
<table class="tborder" cellpadding="6" cellspacing="1" border="0" width="100%" align="center"><tr><td class="alt1" width="100%"><span class="navbar"><a href="index.php" accesskey="1">Heimwerker-Forum</a></span> <span class="navbar">&gt; <a href="forumdisplay.php?f=12">Bad &amp; Sanitär</a></span></td></tr></table>
<div class="vbmenu_popup" id="navbar_search_menu" style="display:none">{_menu(14, "forum")}</div>
<table class="tborder" cellpadding="6" cellspacing="1" border="0" width="100%"><tr><td class="tcat">Themen-Optionen</td><td class="tcat">Ansicht</td></tr></table>
<div id="posts">{"".join(posts)}<div id="lastpost"></div></div>
<table class="tborder" cellpadding="6" cellspacing="1" border="0" width="100%" align="center"><thead><tr><td class="tcat" colspan="3">Ähnliche Themen</td></tr></thead><tbody>{similar}</tbody></table>
<div class="smallfont" align="center">Alle Zeitangaben in WEZ +1. Es ist jetzt 18:04 Uhr.</div></div></div>
<div class="smallfont" align="center">Powered by vBulletin&reg; Version 3.8.11<br />Copyright &copy;2000 - 2024, vBulletin Solutions, Inc.</div>
<div id="footer_links">{_menu(10, "hilfe")}</div></body></html>"""
    return page, "\n".join(gold) + "\n"


# ------------------------------------------------------------------ 6. Q&A on WordPress comments (it)

QUESTION_IT = [
    "Ho un pavimento in cotto fatto a mano in una casa di campagna degli anni Trenta. Da quando abbiamo tolto "
    "la vecchia cera, sulle piastrelle vicino alla porta sono comparse macchie bianche che tornano dopo ogni lavaggio.",
    "Come le tolgo, e con che cosa devo trattare il cotto perché non ricompaiano?",
]
ANSWERS_IT = [
    ("Bottega Ferri", 1, ["Quelle macchie bianche sono efflorescenze saline: l'acqua che sale dal sottofondo porta "
                          "in superficie i sali del terreno e, evaporando, li lascia sul cotto. La cera che avete tolto "
                          "le teneva nascoste, non le impediva.",
                          "Prima di tutto spazzolate a secco con una spazzola di saggina, senza bagnare: ogni lavaggio "
                          "con acqua ne richiama di nuove."]),
    ("Marta R.", 2, ["Da noi è successo lo stesso in una cascina vicino a Lodi. Abbiamo usato un detergente acido "
                     "tamponato per cotto, diluito uno a cinque, e poi risciacquato con pochissima acqua. Dopo due "
                     "passate le macchie sono sparite."]),
    ("Bottega Ferri", 2, ["Attenzione però con l'acido sul cotto fatto a mano: va sempre provato in un angolo "
                          "nascosto, perché alcune terre più tenere si scuriscono. E va usato solo quando il "
                          "pavimento è asciutto da almeno una settimana."]),
    ("Giulio", 1, ["Il vero problema è l'umidità di risalita. Se la casa non ha un vespaio sotto il pavimento, le "
                   "efflorescenze torneranno ogni primavera qualunque trattamento facciate in superficie.",
                   "Noi abbiamo risolto solo dopo aver aperto due bocchette di aerazione nel muro perimetrale, così "
                   "il sottofondo respira e asciuga più in fretta."]),
    ("Anna_cotto", 1, ["Per il trattamento finale evitate le vernici e i prodotti filmanti: chiudono i pori e "
                       "l'umidità, non potendo uscire, stacca la finitura a chiazze. Meglio olio di lino cotto "
                       "diluito con essenza di trementina, in due mani leggere, e poi una cera d'api naturale."]),
    ("Pietro M.", 1, ["Confermo l'olio di lino, ma aspettate l'estate. Su un cotto ancora umido l'olio non penetra "
                      "e resta appiccicoso in superficie per settimane."]),
    ("Bottega Ferri", 2, ["Giusto. Un buon test: appoggiate sul pavimento un foglio di plastica trasparente, "
                          "sigillato con il nastro sui bordi. Se dopo ventiquattro ore sotto il foglio c'è condensa, "
                          "il cotto è ancora troppo umido per qualsiasi trattamento."]),
    ("Lucia", 1, ["Grazie a tutti, domani provo con la spazzola e il foglio di plastica. Per le bocchette di "
                  "aerazione dovrò sentire un muratore, ma la casa in effetti non ha vespaio."]),
]
COMMENT_WORDS_IT = ["dice", "Rispondi", "Segnala"]


def wordpress_qa_page() -> tuple[str, str]:
    """A question answered in a WordPress site's comments (Genesis-style markup, nested replies in
    ``ul.children``): the answers are the content, and trafilatura with comments off prunes them
    with ``#comments``. Written right after the pruned-posts rule (commentposts.py), by its
    author; first measured without any change."""
    rng = random.Random(17)
    title = "Macchie bianche sul cotto dopo aver tolto la cera"
    gold = list(QUESTION_IT)

    def comment(k: int, user: str, paras: list[str], children: str) -> str:
        body = "".join(f"<p>{E(p)}</p>" for p in paras)
        return f"""<li class="comment {rng.choice(["even", "odd"])} depth-{1 if not children else 1}" id="comment-{1700 + k}"><article id="article-comment-{1700 + k}">
<header class="comment-header"><p class="comment-author"><img alt="" src="/avatar/{k}.png" class="avatar" height="48" width="48"><span class="comment-author-name">{E(user)}</span> <span class="says">{COMMENT_WORDS_IT[0]}</span></p>
<p class="comment-meta"><time class="comment-time"><a class="comment-time-link" href="#comment-{1700 + k}">{rng.randint(1, 28)} marzo 2024 alle {rng.randint(7, 23)}:{rng.randint(10, 59)}</a></time></p></header>
<div class="comment-content">{body}</div>
<div class="comment-reply"><a rel="nofollow" class="comment-reply-link" href="#respond">{COMMENT_WORDS_IT[1]}</a> <a class="report" href="#">{COMMENT_WORDS_IT[2]}</a></div></article>{children}</li>"""

    # each depth-2 answer is a reply to the answer before it, nested in its ``ul.children``
    items: list[tuple[str, list[str], list[tuple[str, list[str]]]]] = []
    for user, depth, paras in ANSWERS_IT:
        gold.extend(paras)
        if depth == 1:
            items.append((user, paras, []))
        else:
            items[-1][2].append((user, paras))
    thread, k = [], 0
    for user, paras, replies in items:
        inner = ""
        if replies:
            inner = '<ul class="children">' + "".join(comment(k + 1 + j, u, ps, "") for j, (u, ps) in enumerate(replies)) + "</ul>"
        thread.append(comment(k, user, paras, inner))
        k += 1 + len(replies)
    widgets = "".join(f'<section class="widget"><h3 class="widgettitle">{name}</h3>{_menu(n, slug)}</section>'
                      for name, n, slug in (("Categorie", 12, "categoria"), ("Articoli recenti", 8, "articolo"), ("Archivi", 18, "archivio")))
    page = f"""<!DOCTYPE html>
<html lang="it-IT"><head><meta charset="UTF-8"><title>{title} | Casa e Restauro</title>
<meta property="og:title" content="{title}">{_chrome_script(8)}</head>
<body class="post-template-default single single-post content-sidebar genesis-breadcrumbs-visible">
<div class="site-container"><ul class="genesis-skip-link"><li><a href="#genesis-content" class="screen-reader-shortcut">Vai al contenuto principale</a></li></ul>
<header class="site-header"><div class="wrap"><div class="title-area"><p class="site-title"><a href="/">Casa e Restauro</a></p><p class="site-description">Domande e risposte su case antiche</p></div>
<nav class="nav-primary" aria-label="Principale">{_menu(16, "sezione")}</nav></div></header>
<div class="site-inner"><div class="content-sidebar-wrap"><main class="content" id="genesis-content">
<div class="breadcrumb">Sei qui: <a href="/">Home</a> / <a href="/c/pavimenti">Pavimenti</a> / {title}</div>
<article class="post-2231 post type-post status-publish format-standard category-pavimenti entry">
<header class="entry-header"><h1 class="entry-title">{title}</h1><p class="entry-meta">Domanda di <span class="entry-author">Lucia</span> il <time class="entry-time">2 marzo 2024</time> &middot; <a href="#comments">{len(ANSWERS_IT)} risposte</a></p></header>
<div class="entry-content">{"".join(f"<p>{E(p)}</p>" for p in QUESTION_IT)}</div>
<footer class="entry-footer"><p class="entry-meta"><span class="entry-categories">Archiviato in: <a href="/c/pavimenti">Pavimenti</a></span> <span class="entry-tags">Contrassegnato con: <a href="/t/cotto">cotto</a>, <a href="/t/umidita">umidità</a></span></p></footer></article>
<div class="entry-comments" id="comments"><h3>Risposte</h3><ol class="comment-list">{"".join(thread)}</ol></div>
<div id="respond" class="comment-respond"><h3 id="reply-title" class="comment-reply-title">Rispondi alla domanda</h3><form action="/wp-comments-post.php" method="post" id="commentform" class="comment-form">
<p class="comment-notes">Il tuo indirizzo email non sarà pubblicato.</p><textarea id="comment" name="comment" cols="45" rows="8"></textarea><input name="submit" type="submit" class="submit" value="Invia la risposta"></form></div>
</main><aside class="sidebar sidebar-primary widget-area" role="complementary">{widgets}</aside></div></div>
<footer class="site-footer"><div class="wrap">{_menu(10, "info")}<p>Copyright &copy; 2024 Casa e Restauro &middot; Tutti i diritti riservati</p></div></footer></div>
</body></html>"""
    return page, "\n".join(gold) + "\n"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, make in (("forum_varnish_en", forum_page), ("qa_sourdough_en", qa_page),
                       ("news_comments_passerelle_fr", news_comments_page),
                       ("forum_cadena_es", discourse_page), ("forum_silikon_de", vbulletin_page),
                       ("qa_cotto_it", wordpress_qa_page)):
        page, gold = make()
        (OUT / f"{name}.html").write_text(page, encoding="utf-8")
        (OUT / f"{name}.txt").write_text(gold, encoding="utf-8")
        print(f"{name}: {len(page):,} chars of HTML, {len(gold):,} of gold text")


if __name__ == "__main__":
    main()
